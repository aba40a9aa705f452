package bench

import (
	"fmt"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Pod returns a realistic Pod of about 8 KB of JSON: labels, annotations,
// owner reference, managed fields, three containers with env, probes and
// resources, volumes and a full status. i makes it unique; rv is its
// resourceVersion; namespaces spreads pods over that many namespaces.
func Pod(i, namespaces int, rv int64) *v1.Pod {
	ns := fmt.Sprintf("team-%03d", i%namespaces)
	name := fmt.Sprintf("web-%06d-7d9f8c6b5d-x%04d", i, i%9973)
	created := metav1.NewTime(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second))
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, UID: types.UID(fmt.Sprintf("6b1f2c3d-%04d-4e5f-8a9b-%012d", i%10000, i)),
			ResourceVersion:   strconv.FormatInt(rv, 10),
			CreationTimestamp: created,
			GenerateName:      "web-7d9f8c6b5d-",
			Labels: map[string]string{
				"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": fmt.Sprintf("web-%d", i%50),
				"app.kubernetes.io/version": "1.27.3", "pod-template-hash": "7d9f8c6b5d", "tier": "frontend",
			},
			Annotations: map[string]string{
				"kubectl.kubernetes.io/restartedAt":              "2026-10-30T08:15:00Z",
				"prometheus.io/scrape":                           "true",
				"prometheus.io/port":                             "9102",
				"cluster-autoscaler.kubernetes.io/safe-to-evict": "true",
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f8c6b5d", UID: "1f2e3d4c-5b6a-7980-a1b2-c3d4e5f60718", Controller: ptr(true), BlockOwnerDeletion: ptr(true)}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &created, FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app.kubernetes.io/name":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"1f2e3d4c\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:env":{},"f:image":{},"f:name":{},"f:ports":{},"f:resources":{}}},"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}`)}},
				{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &created, FieldsType: "FieldsV1", Subresource: "status",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{},"f:startTime":{}}}`)}},
			},
		},
		Spec: v1.PodSpec{
			NodeName:                      fmt.Sprintf("node-%03d", i%200),
			ServiceAccountName:            "web",
			RestartPolicy:                 v1.RestartPolicyAlways,
			DNSPolicy:                     v1.DNSClusterFirst,
			SchedulerName:                 "default-scheduler",
			TerminationGracePeriodSeconds: ptr(int64(30)),
			Tolerations: []v1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
			},
			Volumes: []v1.Volume{
				{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "web-config"}}}},
				{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: ptr(resource.MustParse("512Mi"))}}},
				{Name: "kube-api-access-abcde", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
					{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(3607))}},
					{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				}}}},
			},
		},
		Status: v1.PodStatus{
			Phase: v1.PodRunning, HostIP: fmt.Sprintf("10.0.%d.%d", i%200, 10), PodIP: fmt.Sprintf("10.%d.%d.%d", 100+i%100, i%250, i%200),
			QOSClass: v1.PodQOSBurstable, StartTime: &created,
		},
	}
	for _, t := range []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled} {
		p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: t, Status: v1.ConditionTrue, LastTransitionTime: created})
	}
	for c, cname := range []string{"web", "sidecar-proxy", "log-shipper"} {
		ctr := v1.Container{
			Name:  cname,
			Image: fmt.Sprintf("registry.example.com/platform/%s:1.27.%d", cname, c),
			Ports: []v1.ContainerPort{{Name: "http", ContainerPort: int32(8080 + c), Protocol: v1.ProtocolTCP}},
			Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("256Mi")},
				Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("512Mi")},
			},
			ReadinessProbe:         &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstrFromInt(8080 + c)}}, PeriodSeconds: 10},
			VolumeMounts:           []v1.VolumeMount{{Name: "config", MountPath: "/etc/web"}, {Name: "kube-api-access-abcde", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageReadFile, ImagePullPolicy: v1.PullIfNotPresent,
		}
		for e := 0; e < 6; e++ {
			ctr.Env = append(ctr.Env, v1.EnvVar{Name: fmt.Sprintf("FEATURE_FLAG_%d", e), Value: fmt.Sprintf("value-%d-%d", c, e)})
		}
		ctr.Env = append(ctr.Env, v1.EnvVar{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}})
		p.Spec.Containers = append(p.Spec.Containers, ctr)
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, v1.ContainerStatus{
			Name: cname, Ready: true, RestartCount: int32(i % 3), Image: ctr.Image, ImageID: "registry.example.com/platform/" + cname + "@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
			ContainerID: fmt.Sprintf("containerd://%064d", i*3+c), Started: ptr(true),
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: created}},
		})
	}
	return p
}

// PodStatusUpdate is Pod(i, namespaces, rv) as a kubelet status update at
// rv leaves it: one container restarted, its start time, the Ready
// condition's transition and the kubelet's managed fields entry stamped
// with a time of rv's. Spec, labels and owners are Pod's. The fake's watch
// updates are these, the kind of update a Pod informer sees most.
func PodStatusUpdate(i, namespaces int, rv int64) *v1.Pod {
	p := Pod(i, namespaces, rv)
	at := metav1.NewTime(p.CreationTimestamp.Add(time.Duration(rv%1_000_000) * time.Second))
	p.ManagedFields[1].Time = &at
	cs := &p.Status.ContainerStatuses[int(rv%int64(len(p.Status.ContainerStatuses)))]
	cs.RestartCount += int32(rv % 1000)
	cs.State.Running.StartedAt = at
	for c := range p.Status.Conditions {
		if p.Status.Conditions[c].Type == v1.PodReady {
			p.Status.Conditions[c].LastTransitionTime = at
		}
	}
	return p
}

func ptr[T any](v T) *T { return &v }
