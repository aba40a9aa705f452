package main

import (
	"maps"
	"math/rand"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/meta"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"

	"github.com/boltinformer/boltinformer/internal/admin/admintest"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// The goldens testdata/kinds_*.golden are what kubectl get prints for the
// objects of kindsFixture. They were written by applying, by hand, the
// rules of the apiserver's table printers that kubectl shows (kubernetes
// v1.36 pkg/printers/internalversion/printers.go: printPod, printDeployment,
// printService, printNode, …, with the columns of its AddHandlers and the
// tabwriter layout of cli-runtime's table printer), one object at a time,
// and comparing each row with cachectl's output; kubectl itself was not
// run. TestPodColumns states the trickiest cells independently.

// at is a time relative to the clock the tests inject.
func at(ago time.Duration) metav1.Time { return metav1.NewTime(admintest.Now.Add(-ago)) }

func om(ns, name string, age time.Duration) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), ResourceVersion: "7", CreationTimestamp: at(age)}
}

func terminated(reason string, code int32, finished time.Duration) *v1.ContainerStateTerminated {
	return &v1.ContainerStateTerminated{Reason: reason, ExitCode: code, FinishedAt: at(finished)}
}

// fixturePods exercise kubectl's READY, STATUS and RESTARTS rules.
func fixturePods() []runtime.Object {
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	crash := &v1.Pod{ObjectMeta: om("prod", "crash-0", 3*time.Hour),
		Spec: v1.PodSpec{NodeName: "node-1", Containers: []v1.Container{{Name: "app"}, {Name: "log"}},
			ReadinessGates: []v1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIPs: []v1.PodIP{{IP: "10.0.0.5"}, {IP: "fd00::5"}}, NominatedNodeName: "node-2",
			Conditions: []v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionTrue}, {Type: "example.com/dns", Status: v1.ConditionFalse}},
			ContainerStatuses: []v1.ContainerStatus{
				{Name: "app", Ready: true, State: running, RestartCount: 3, LastTerminationState: v1.ContainerState{Terminated: terminated("Error", 1, 5*time.Minute)}},
				{Name: "log", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}, RestartCount: 7,
					LastTerminationState: v1.ContainerState{Terminated: terminated("Error", 2, 2*time.Minute)}},
			}}}
	initPod := &v1.Pod{ObjectMeta: om("prod", "init-0", 90*time.Second),
		Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "fetch"}, {Name: "migrate"}}, Containers: []v1.Container{{Name: "app"}}},
		Status: v1.PodStatus{Phase: v1.PodPending,
			InitContainerStatuses: []v1.ContainerStatus{{Name: "fetch", State: v1.ContainerState{Terminated: terminated("Completed", 0, time.Minute)}}, {Name: "migrate", State: running}},
			ContainerStatuses:     []v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}}}}}}
	initFail := &v1.Pod{ObjectMeta: om("prod", "init-1", 10*time.Minute),
		Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "fetch"}}, Containers: []v1.Container{{Name: "app"}}},
		Status: v1.PodStatus{Phase: v1.PodPending,
			InitContainerStatuses: []v1.ContainerStatus{{Name: "fetch", RestartCount: 4, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 3}},
				LastTerminationState: v1.ContainerState{Terminated: terminated("", 3, 40*time.Second)}}}}}
	deleting := &v1.Pod{ObjectMeta: om("prod", "term-0", 48*time.Hour),
		Spec:   v1.PodSpec{Containers: []v1.Container{{Name: "app"}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "app", Ready: true, State: running}}}}
	deleting.DeletionTimestamp = ptr.To(at(time.Minute))
	done := &v1.Pod{ObjectMeta: om("prod", "done-0", 26*time.Hour),
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "job"}}},
		Status: v1.PodStatus{Phase: v1.PodSucceeded,
			ContainerStatuses: []v1.ContainerStatus{{Name: "job", State: v1.ContainerState{Terminated: terminated("Completed", 0, 25*time.Hour)}}}}}
	always := v1.ContainerRestartPolicyAlways
	sidecar := &v1.Pod{ObjectMeta: om("prod", "sidecar-0", 400*24*time.Hour),
		Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "proxy", RestartPolicy: &always}}, Containers: []v1.Container{{Name: "app"}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodInitialized, Status: v1.ConditionTrue}},
			InitContainerStatuses: []v1.ContainerStatus{{Name: "proxy", Ready: true, Started: ptr.To(true), State: running, RestartCount: 2,
				LastTerminationState: v1.ContainerState{Terminated: terminated("Error", 137, 30*time.Minute)}}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "app", Ready: true, State: running}}}}
	gated := &v1.Pod{ObjectMeta: om("prod", "gated-0", 5*time.Second),
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}},
		Status: v1.PodStatus{Phase: v1.PodPending,
			Conditions: []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonSchedulingGated}}}}
	oom := &v1.Pod{ObjectMeta: om("prod", "oom-0", 2*time.Hour),
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}, {Name: "log"}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse}},
			ContainerStatuses: []v1.ContainerStatus{
				{Name: "app", State: v1.ContainerState{Terminated: terminated("OOMKilled", 137, time.Minute)}},
				{Name: "log", Ready: true, State: running}}}}
	partial := oom.DeepCopy()
	partial.Name = "partial-0"
	partial.Status.ContainerStatuses[0].State.Terminated = terminated("Completed", 0, time.Minute)
	return []runtime.Object{crash, initPod, initFail, deleting, done, sidecar, gated, oom, partial}
}

// kindsFixture is one store per kind with kubectl columns.
func kindsFixture() map[schema.GroupVersionKind][]runtime.Object {
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	template := v1.PodTemplateSpec{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "nginx", Image: "nginx:1.27"}, {Name: "log", Image: "busybox:1.36"}}}}
	tcp := v1.ProtocolTCP
	ready := func(s v1.ConditionStatus) []v1.NodeCondition {
		return []v1.NodeCondition{{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse}, {Type: v1.NodeReady, Status: s}}
	}
	node1 := &v1.Node{ObjectMeta: om("", "node-1", 30*24*time.Hour),
		Status: v1.NodeStatus{Conditions: ready(v1.ConditionTrue),
			Addresses: []v1.NodeAddress{{Type: v1.NodeHostName, Address: "node-1"}, {Type: v1.NodeInternalIP, Address: "10.0.0.1"}, {Type: v1.NodeExternalIP, Address: "198.51.100.1"}},
			NodeInfo:  v1.NodeSystemInfo{KubeletVersion: "v1.32.0", OSImage: "Ubuntu 24.04 LTS", KernelVersion: "6.8.0-45-generic", Architecture: "amd64", ContainerRuntimeVersion: "containerd://1.7.22"}}}
	node1.Labels = map[string]string{"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "etcd", "kubernetes.io/os": "linux"}
	node2 := &v1.Node{ObjectMeta: om("", "node-2", 3*24*time.Hour), Spec: v1.NodeSpec{Unschedulable: true},
		Status: v1.NodeStatus{Conditions: ready(v1.ConditionUnknown), NodeInfo: v1.NodeSystemInfo{KubeletVersion: "v1.31.4"}}}
	node3 := &v1.Node{ObjectMeta: om("", "node-3", time.Minute)}
	deleting := om("", "old", 3*time.Hour)
	deleting.DeletionTimestamp = ptr.To(at(time.Minute))
	storage := func(q string) v1.ResourceList { return v1.ResourceList{v1.ResourceStorage: apiresource.MustParse(q)} }
	fs := v1.PersistentVolumeFilesystem
	event := &v1.Event{ObjectMeta: om("prod", "crash-0.17a2b3c4", 10*time.Minute),
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "crash-0", FieldPath: "spec.containers{log}"},
		Reason:         "BackOff", Message: "Back-off restarting failed container log\n", Type: "Warning", Count: 3,
		FirstTimestamp: at(10 * time.Minute), LastTimestamp: at(time.Minute), Source: v1.EventSource{Component: "kubelet", Host: "node-1"}}
	singleton := &v1.Event{ObjectMeta: om("prod", "web.17a2b3c5", 5*time.Minute),
		InvolvedObject: v1.ObjectReference{Kind: "Deployment", Name: "web"}, Reason: "ScalingReplicaSet", Message: "Scaled up replica set web-5d9 to 3",
		Type: "Normal", EventTime: metav1.NewMicroTime(admintest.Now.Add(-5 * time.Minute)), ReportingController: "deployment-controller"}
	return map[schema.GroupVersionKind][]runtime.Object{
		{Version: "v1", Kind: "Pod"}: fixturePods(),
		{Group: "apps", Version: "v1", Kind: "Deployment"}: {
			&appsv1.Deployment{ObjectMeta: om("prod", "web", 26*time.Hour), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: selector, Template: template},
				Status: appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2}},
			&appsv1.Deployment{ObjectMeta: om("prod", "idle", 70*time.Minute), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0),
				Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}}}},
		},
		{Group: "apps", Version: "v1", Kind: "ReplicaSet"}: {
			&appsv1.ReplicaSet{ObjectMeta: om("prod", "web-5d9", 26*time.Hour), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3), Selector: selector, Template: template},
				Status: appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 2}},
		},
		{Group: "apps", Version: "v1", Kind: "StatefulSet"}: {
			&appsv1.StatefulSet{ObjectMeta: om("prod", "db", 100*24*time.Hour), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), Selector: selector, Template: template},
				Status: appsv1.StatefulSetStatus{ReadyReplicas: 1}},
		},
		{Group: "apps", Version: "v1", Kind: "DaemonSet"}: {
			&appsv1.DaemonSet{ObjectMeta: om("kube-system", "agent", 9*24*time.Hour),
				Spec: appsv1.DaemonSetSpec{Selector: selector, Template: v1.PodTemplateSpec{Spec: v1.PodSpec{NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
					Containers: []v1.Container{{Name: "agent", Image: "agent:2"}}}}},
				Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 4, CurrentNumberScheduled: 4, NumberReady: 3, UpdatedNumberScheduled: 4, NumberAvailable: 3}},
		},
		{Group: "batch", Version: "v1", Kind: "Job"}: {
			&batchv1.Job{ObjectMeta: om("prod", "migrate", 12*time.Minute), Spec: batchv1.JobSpec{Completions: ptr.To[int32](1), Selector: selector, Template: template},
				Status: batchv1.JobStatus{Succeeded: 1, StartTime: ptr.To(at(10 * time.Minute)), CompletionTime: ptr.To(at(9 * time.Minute)),
					Conditions: []batchv1.JobCondition{{Type: batchv1.JobSuccessCriteriaMet, Status: v1.ConditionTrue}, {Type: batchv1.JobComplete, Status: v1.ConditionTrue}}}},
			&batchv1.Job{ObjectMeta: om("prod", "batch-2", 6*time.Minute), Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](3)},
				Status: batchv1.JobStatus{Succeeded: 1, StartTime: ptr.To(at(5 * time.Minute))}},
			&batchv1.Job{ObjectMeta: om("prod", "broken", 3*time.Hour), Spec: batchv1.JobSpec{Completions: ptr.To[int32](5)},
				Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: v1.ConditionTrue}}}},
		},
		{Group: "batch", Version: "v1", Kind: "CronJob"}: {
			&batchv1.CronJob{ObjectMeta: om("prod", "nightly", 40*24*time.Hour), Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", Suspend: ptr.To(false),
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: template}}},
				Status: batchv1.CronJobStatus{Active: []v1.ObjectReference{{Name: "nightly-1"}}, LastScheduleTime: ptr.To(at(22 * time.Hour))}},
			&batchv1.CronJob{ObjectMeta: om("prod", "hourly", 2*time.Hour), Spec: batchv1.CronJobSpec{Schedule: "@hourly", TimeZone: ptr.To("Europe/Paris")}},
		},
		{Version: "v1", Kind: "Service"}: {
			&v1.Service{ObjectMeta: om("prod", "api", 50*time.Hour), Spec: v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, ClusterIPs: []string{"10.96.0.10"},
				Ports: []v1.ServicePort{{Port: 80, Protocol: tcp}, {Port: 53, Protocol: v1.ProtocolUDP}}, Selector: map[string]string{"app": "api"}}},
			&v1.Service{ObjectMeta: om("prod", "lb", 2*time.Hour), Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.96.0.11"},
				Ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: tcp}}}},
			&v1.Service{ObjectMeta: om("prod", "lb-ready", 2*time.Hour), Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.96.0.12"},
				Ports: []v1.ServicePort{{Port: 443, NodePort: 30443, Protocol: tcp}}, ExternalIPs: []string{"192.0.2.7"}},
				Status: v1.ServiceStatus{LoadBalancer: v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: "203.0.113.10"}, {Hostname: "lb.example.com"}, {IP: "203.0.113.10"}}}}},
			&v1.Service{ObjectMeta: om("prod", "ext", time.Hour), Spec: v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "db.example.com"}},
			&v1.Service{ObjectMeta: om("prod", "headless", time.Hour), Spec: v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, ClusterIPs: []string{"None"},
				Ports: []v1.ServicePort{{Port: 5432, Protocol: tcp}}}},
		},
		{Version: "v1", Kind: "Node"}:      {node1, node2, node3},
		{Version: "v1", Kind: "Namespace"}: {&v1.Namespace{ObjectMeta: om("", "prod", 90*24*time.Hour), Status: v1.NamespaceStatus{Phase: v1.NamespaceActive}}, &v1.Namespace{ObjectMeta: deleting, Status: v1.NamespaceStatus{Phase: v1.NamespaceTerminating}}},
		{Version: "v1", Kind: "ConfigMap"}: {&v1.ConfigMap{ObjectMeta: om("prod", "settings", 3*time.Minute), Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"c": {3}}}},
		{Version: "v1", Kind: "Secret"}: {
			&v1.Secret{ObjectMeta: om("prod", "db-creds", time.Hour), Type: v1.SecretTypeOpaque, Data: map[string][]byte{"user": []byte("u"), "password": []byte("p")}},
			&v1.Secret{ObjectMeta: om("prod", "tls", time.Hour), Type: v1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": {1}, "tls.key": {2}, "ca.crt": {3}}},
		},
		{Version: "v1", Kind: "ServiceAccount"}: {&v1.ServiceAccount{ObjectMeta: om("prod", "default", 90*24*time.Hour)}},
		{Version: "v1", Kind: "Endpoints"}: {
			&v1.Endpoints{ObjectMeta: om("prod", "api", 50*time.Hour), Subsets: []v1.EndpointSubset{{
				Addresses: []v1.EndpointAddress{{IP: "10.1.0.1"}, {IP: "10.1.0.2"}}, Ports: []v1.EndpointPort{{Port: 80}, {Port: 443}}}}},
			&v1.Endpoints{ObjectMeta: om("prod", "headless", time.Hour), Subsets: []v1.EndpointSubset{{Addresses: []v1.EndpointAddress{{IP: "fd00::1"}}}}},
			&v1.Endpoints{ObjectMeta: om("prod", "lb", 2*time.Hour)},
		},
		{Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice"}: {
			&discoveryv1.EndpointSlice{ObjectMeta: om("prod", "api-x7k2p", 50*time.Hour), AddressType: discoveryv1.AddressTypeIPv4,
				Ports:     []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}, {Name: ptr.To("metrics")}},
				Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.1.0.1"}}, {Addresses: []string{"10.1.0.2", "10.1.0.3", "10.1.0.4"}}}},
			&discoveryv1.EndpointSlice{ObjectMeta: om("prod", "lb-9qz2c", 2*time.Hour), AddressType: discoveryv1.AddressTypeIPv4},
		},
		{Version: "v1", Kind: "PersistentVolume"}: {
			&v1.PersistentVolume{ObjectMeta: om("", "pv-1", 20*24*time.Hour), Spec: v1.PersistentVolumeSpec{Capacity: storage("10Gi"),
				AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteMany, v1.ReadWriteOnce, v1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain, ClaimRef: &v1.ObjectReference{Namespace: "prod", Name: "data"},
				StorageClassName: "standard", VolumeMode: &fs},
				Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound}},
			&v1.PersistentVolume{ObjectMeta: om("", "pv-2", time.Hour), Spec: v1.PersistentVolumeSpec{Capacity: storage("500Mi"),
				AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}, PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete},
				Status: v1.PersistentVolumeStatus{Phase: v1.VolumeFailed, Reason: "ProvisioningFailed"}},
		},
		{Version: "v1", Kind: "PersistentVolumeClaim"}: {
			&v1.PersistentVolumeClaim{ObjectMeta: om("prod", "data", 20*24*time.Hour), Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv-1", StorageClassName: ptr.To("standard"),
				Resources: v1.VolumeResourceRequirements{Requests: storage("5Gi")}, VolumeMode: &fs},
				Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, Capacity: storage("10Gi"), AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}}},
			&v1.PersistentVolumeClaim{ObjectMeta: om("prod", "scratch", time.Minute), Spec: v1.PersistentVolumeClaimSpec{Resources: v1.VolumeResourceRequirements{Requests: storage("1Gi")}},
				Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending}},
		},
		{Version: "v1", Kind: "Event"}: {event, singleton},
		{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}: {
			&networkingv1.Ingress{ObjectMeta: om("prod", "web", 26*time.Hour), Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("nginx"),
				Rules: []networkingv1.IngressRule{{Host: "a.example.com"}, {Host: "b.example.com"}}, TLS: []networkingv1.IngressTLS{{Hosts: []string{"a.example.com"}}}},
				Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "203.0.113.5"}}}}},
			&networkingv1.Ingress{ObjectMeta: om("prod", "many", time.Hour), Spec: networkingv1.IngressSpec{
				Rules: []networkingv1.IngressRule{{Host: "a.example.com"}, {}, {Host: "c.example.com"}, {Host: "d.example.com"}, {}}}},
			&networkingv1.Ingress{ObjectMeta: om("prod", "catch-all", time.Hour)},
		},
	}
}

// writeKindsFixture writes kindsFixture into a new file, one store per
// kind, named as boltinformer names them by default (Kind.version.group).
func writeKindsFixture(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kinds.db")
	db, err := cachefile.Open(path, cachefile.Options{NoSync: true, Now: func() time.Time { return admintest.Now }})
	if err != nil {
		t.Fatal(err)
	}
	for gvk, objs := range kindsFixture() {
		plural := strings.ToLower(gvk.Kind) + "s"
		switch gvk.Kind {
		case "Endpoints":
			plural = "endpoints"
		case "Ingress":
			plural = "ingresses"
		}
		st, err := boltstore.New(db, strings.TrimSuffix(gvk.Kind+"."+gvk.Version+"."+gvk.Group, "."), boltstore.StoreOptions{Object: objs[0].DeepCopyObject(),
			Identity: &cachefile.Identity{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Resource: plural}})
		if err != nil {
			t.Fatal(err)
		}
		ops := make([]boltstore.Op, len(objs))
		for i, o := range objs {
			ops[i] = boltstore.Op{Type: boltstore.OpUpsert, Obj: o}
		}
		if _, err := st.Apply(ops, "7"); err != nil {
			t.Fatalf("%s: %v", gvk, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestKindColumnsGolden(t *testing.T) {
	path := writeKindsFixture(t)
	before := testutil.StatFile(t, path)
	for _, res := range []string{"pods", "deployments", "replicasets", "statefulsets", "daemonsets", "jobs", "cronjobs", "services", "nodes",
		"namespaces", "configmaps", "secrets", "serviceaccounts", "endpoints", "endpointslices", "pv", "pvc", "events", "ingresses"} {
		t.Run(res, func(t *testing.T) {
			for _, wide := range []bool{false, true} {
				args := []string{"get", res, "-A", "--db", path}
				name := "kinds_" + res
				if wide {
					args = append(args, "-o", "wide")
					name += "_wide"
				}
				r := cachectl(t, args...).ok(t)
				golden(t, name, r.stdout)
			}
		})
	}
	testutil.Unchanged(t, path, before)
}

// TestPodColumns states kubectl's Pod READY, STATUS and RESTARTS cells for
// each fixture Pod, derived by hand from printPod's rules (see the
// comment at the top of this file), independently of the goldens.
func TestPodColumns(t *testing.T) {
	want := map[string][3]string{
		// The last container status decides STATUS (the loop runs backwards):
		// a waiting reason; restarts add up, "(2m ago)" from the latest termination.
		"crash-0": {"1/2", "CrashLoopBackOff", "10 (2m ago)"},
		// The first unfinished init container: Init:index/count.
		"init-0": {"0/1", "Init:1/2", "0"},
		// A failed init container without a reason: Init:ExitCode:N.
		"init-1": {"0/1", "Init:ExitCode:3", "4 (40s ago)"},
		"term-0": {"1/1", "Terminating", "0"},
		"done-0": {"0/1", "Completed", "0"},
		// A restartable init container counts in READY and RESTARTS.
		"sidecar-0": {"2/2", "Running", "2 (30m ago)"},
		"gated-0":   {"0/1", "SchedulingGated", "0"},
		// A terminated container's reason.
		"oom-0": {"1/2", "OOMKilled", "0"},
		// Completed beside a running container, without the Ready condition.
		"partial-0": {"1/2", "NotReady", "0"},
	}
	kc, _ := columnsFor(schema.GroupKind{Kind: "Pod"})
	for _, obj := range fixturePods() {
		pod := obj.(*v1.Pod)
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
		if err != nil {
			t.Fatal(err)
		}
		cells, err := kc.cells.unstructured(&unstructured.Unstructured{Object: content}, admintest.Now)
		if err != nil {
			t.Fatal(err)
		}
		got := [3]string{cells[1].(string), cells[2].(string), cells[3].(string)}
		if got != want[pod.Name] {
			t.Errorf("%s: READY, STATUS, RESTARTS = %q, want %q", pod.Name, got, want[pod.Name])
		}
	}
}

// TestRowOfInvalidUTF8 reads an Event whose message is not valid UTF-8
// (protobuf does not check it): the row from the decoded object (a file's
// table) equals the row from its JSON form (the socket's), where
// encoding/json replaced each bad byte with U+FFFD.
func TestRowOfInvalidUTF8(t *testing.T) {
	e := &v1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e", CreationTimestamp: metav1.NewTime(admintest.Now)},
		Message: "exit \xff\xfe status \xc3", Reason: "Back\x80Off", InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "p"}}
	typed, err := eventColumns.cells.row(e, admintest.Now)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := eventColumns.cells.row(jsonForm(t, e), admintest.Now)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(typed, fromJSON) {
		t.Fatalf("cells from the object %q, from its JSON form %q", typed, fromJSON)
	}
	if !slices.Contains(typed, interface{}("exit \ufffd\ufffd status \ufffd")) {
		t.Fatalf("cells %q: no message with each bad byte replaced", typed)
	}
}

// TestTypedCellsEqualUnstructured fuzzes objects of every kind with
// columns, and of one without (genericColumns), and checks that a row
// filled from the decoded object (what a file's table reads) equals the
// row filled from its JSON form (what the admin socket carries).
func TestTypedCellsEqualUnstructured(t *testing.T) {
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(7), serializer.NewCodecFactory(scheme.Scheme)).
		NilChance(0.2).NumElements(0, 3).MaxDepth(10)
	rng := rand.New(rand.NewSource(8))
	kinds := map[schema.GroupKind]kindColumns{{Kind: "LimitRange"}: genericColumns}
	for gk, kc := range builtinColumns {
		kinds[gk] = kc
	}
	gks := slices.SortedFunc(maps.Keys(kinds), func(a, b schema.GroupKind) int { return strings.Compare(a.String(), b.String()) })
	for _, gk := range gks {
		kc := kinds[gk]
		for i := range 40 {
			obj, err := scheme.Scheme.New(gk.WithVersion("v1"))
			if err != nil {
				t.Fatalf("%v: %v", gk, err)
			}
			f.Fill(obj)
			if i%2 == 0 { // an age in kubectl's finer units, not years
				m, err := meta.Accessor(obj)
				if err != nil {
					t.Fatal(err)
				}
				m.SetCreationTimestamp(metav1.NewTime(admintest.Now.Add(-time.Duration(rng.Int63n(int64(3 * 24 * time.Hour)))).Truncate(time.Second)))
			}
			typed, ok := kc.cells.typed(obj, admintest.Now)
			if !ok {
				t.Fatalf("%v: the typed rule refused a %T", gk, obj)
			}
			u := jsonForm(t, obj)
			fromJSON, err := kc.cells.unstructured(u, admintest.Now)
			if err != nil {
				t.Fatalf("%v #%d: %v", gk, i, err)
			}
			if !reflect.DeepEqual(typed, fromJSON) {
				t.Fatalf("%v #%d: cells from the object %q, from its JSON form %q", gk, i, typed, fromJSON)
			}
			// row takes either form, and an object the typed rule refuses.
			for _, o := range []runtime.Object{obj, u} {
				got, err := kc.cells.row(o, admintest.Now)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, typed) {
					t.Fatalf("%v #%d: row of %T %q, want %q", gk, i, o, got, typed)
				}
			}
		}
	}
}
