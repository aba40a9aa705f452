package bench

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The generators of the objects the fake serves besides Pods (podgen.go):
// one per type of an operator-shaped process (scenario multi) and the 1 KB
// ConfigMaps of scenario million. Each returns object i of its type at
// resourceVersion rv, or with update set, that object as an update at rv
// leaves it (a status, a data value or a count changed, a managed-fields
// time stamped). Sizes are those of their kind in a busy cluster.

// ObjectGen makes object i of a type at resourceVersion rv, spread over
// namespaces namespaces (ignored by cluster-scoped types), or with update
// set, that object as an update at rv leaves it.
type ObjectGen func(i, namespaces int, rv int64, update bool) runtime.Object

var genEpoch = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// genMeta is the metadata every generated object shares: labels, an
// annotation, a managed-fields entry whose time an update moves.
func genMeta(prefix string, i, namespaces int, rv int64, update bool) metav1.ObjectMeta {
	created := metav1.NewTime(genEpoch.Add(time.Duration(i) * time.Second))
	at := created
	if update {
		at = metav1.NewTime(created.Add(time.Duration(rv%1_000_000) * time.Second))
	}
	m := metav1.ObjectMeta{
		Name: fmt.Sprintf("%s-%06d", prefix, i), UID: types.UID(fmt.Sprintf("7c2e4a1b-%04d-4d3c-9b8a-%012d", i%10000, i)),
		ResourceVersion: strconv.FormatInt(rv, 10), CreationTimestamp: created,
		Labels: map[string]string{
			"app.kubernetes.io/name": prefix, "app.kubernetes.io/instance": fmt.Sprintf("%s-%d", prefix, i%50),
			"app.kubernetes.io/part-of": "platform",
		},
		Annotations: map[string]string{"meta.helm.sh/release-name": fmt.Sprintf("release-%d", i%40)},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "helm", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			Time: &at, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{},"f:app.kubernetes.io/name":{}}}}`)}}},
	}
	if namespaces > 0 {
		m.Namespace = fmt.Sprintf("team-%03d", i%namespaces)
	}
	return m
}

// ConfigMap is a ConfigMap of about 1 KB of protobuf: three data keys of
// configuration text; an update changes one of them.
func ConfigMap(i, namespaces int, rv int64, update bool) runtime.Object {
	cm := &v1.ConfigMap{ObjectMeta: genMeta("config", i, namespaces, rv, update), Data: map[string]string{
		"app.properties": fmt.Sprintf("server.port=%d\nlog.level=info\nfeature.flags=a,b,c\ncache.ttl=300s\npool.size=%d\n", 8000+i%1000, 8+i%8),
		"routes.yaml":    strings.Repeat(fmt.Sprintf("- path: /api/v%d\n  backend: svc-%06d:8080\n", i%3+1, i), 5),
		"revision":       strconv.Itoa(i),
	}}
	if update {
		cm.Data["revision"] = strconv.FormatInt(rv, 10)
	}
	return cm
}

// Secret is an Opaque Secret of two keys.
func Secret(i, namespaces int, rv int64, update bool) runtime.Object {
	s := &v1.Secret{ObjectMeta: genMeta("secret", i, namespaces, rv, update), Type: v1.SecretTypeOpaque, Data: map[string][]byte{
		"username": fmt.Appendf(nil, "svc-user-%06d", i),
		"password": []byte(strings.Repeat(fmt.Sprintf("%08x", i*2654435761), 8)),
	}}
	if update {
		s.Data["password"] = []byte(strings.Repeat(fmt.Sprintf("%08x", rv*2654435761), 8))
	}
	return s
}

// Service is a ClusterIP Service of two ports.
func Service(i, namespaces int, rv int64, update bool) runtime.Object {
	s := &v1.Service{ObjectMeta: genMeta("svc", i, namespaces, rv, update), Spec: v1.ServiceSpec{
		Type: v1.ServiceTypeClusterIP, ClusterIP: fmt.Sprintf("10.96.%d.%d", i/250%250, i%250), ClusterIPs: []string{fmt.Sprintf("10.96.%d.%d", i/250%250, i%250)},
		Selector: map[string]string{"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": fmt.Sprintf("web-%d", i%50)},
		Ports: []v1.ServicePort{
			{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)},
			{Name: "metrics", Protocol: v1.ProtocolTCP, Port: 9102, TargetPort: intstr.FromInt32(9102)},
		},
		SessionAffinity: v1.ServiceAffinityNone, IPFamilies: []v1.IPFamily{v1.IPv4Protocol},
	}}
	if update {
		s.Annotations["bench.boltinformer.io/revision"] = strconv.FormatInt(rv, 10)
	}
	return s
}

// EndpointSlice is the slice of a Service with five endpoints; an update
// flips one endpoint's readiness.
func EndpointSlice(i, namespaces int, rv int64, update bool) runtime.Object {
	e := &discoveryv1.EndpointSlice{ObjectMeta: genMeta("svc", i, namespaces, rv, update), AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{{Name: ptr("http"), Protocol: ptr(v1.ProtocolTCP), Port: ptr(int32(8080))}}}
	e.Name += "-" + fmt.Sprintf("%05x", i%0xfffff)
	e.Labels[discoveryv1.LabelServiceName] = fmt.Sprintf("svc-%06d", i)
	for k := range 5 {
		e.Endpoints = append(e.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", 100+k, i/250%250, i%250)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(!update || int64(k) != rv%5), Serving: ptr(true), Terminating: ptr(false)},
			NodeName:   ptr(fmt.Sprintf("node-%03d", (i+k)%200)),
			TargetRef:  &v1.ObjectReference{Kind: "Pod", Namespace: e.Namespace, Name: fmt.Sprintf("web-%06d-%d", i, k), UID: types.UID(fmt.Sprintf("0a%06d-%d", i, k))},
		})
	}
	return e
}

// podTemplate is the template of the generated Deployments and ReplicaSets.
func podTemplate(i int) v1.PodTemplateSpec {
	return v1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": fmt.Sprintf("web-%d", i%50)}},
		Spec: v1.PodSpec{ServiceAccountName: "web", Containers: []v1.Container{{
			Name: "web", Image: fmt.Sprintf("registry.example.com/platform/web:1.27.%d", i%10),
			Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: v1.ProtocolTCP}},
			Env:   []v1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "REGION", Value: "eu-west-1"}},
			Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("256Mi")},
				Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("512Mi")},
			},
			ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 10},
		}}},
	}
}

// Deployment is a Deployment of three replicas; an update moves its status.
func Deployment(i, namespaces int, rv int64, update bool) runtime.Object {
	ready := int32(3)
	if update {
		ready = int32(rv % 4)
	}
	return &appsv1.Deployment{ObjectMeta: genMeta("web", i, namespaces, rv, update),
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(3)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "web"}},
			Template: podTemplate(i), Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, ReadyReplicas: ready, AvailableReplicas: ready, UpdatedReplicas: 3,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: v1.ConditionTrue, Reason: "MinimumReplicasAvailable"}}}}
}

// ReplicaSet is a Deployment's ReplicaSet; an update moves its status.
func ReplicaSet(i, namespaces int, rv int64, update bool) runtime.Object {
	ready := int32(3)
	if update {
		ready = int32(rv % 4)
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: genMeta("web", i, namespaces, rv, update),
		Spec:   appsv1.ReplicaSetSpec{Replicas: ptr(int32(3)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "web"}}, Template: podTemplate(i)},
		Status: appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: ready, AvailableReplicas: ready, ObservedGeneration: 1}}
	rs.Name += "-7d9f8c6b5d"
	rs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: fmt.Sprintf("web-%06d", i), UID: "1f2e3d4c-5b6a-7980-a1b2-c3d4e5f60718", Controller: ptr(true)}}
	return rs
}

// Node is a Node with its capacity, conditions and images; an update is a
// kubelet heartbeat.
func Node(i, _ int, rv int64, update bool) runtime.Object {
	n := &v1.Node{ObjectMeta: genMeta("node", i, 0, rv, update), Spec: v1.NodeSpec{PodCIDR: fmt.Sprintf("10.%d.%d.0/24", 100+i/250%100, i%250), ProviderID: fmt.Sprintf("aws:///eu-west-1a/i-%017x", i)}}
	n.Labels["kubernetes.io/hostname"] = n.Name
	n.Labels["topology.kubernetes.io/zone"] = fmt.Sprintf("eu-west-1%c", 'a'+i%3)
	capacity := v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"), v1.ResourceMemory: resource.MustParse("32Gi"), v1.ResourcePods: resource.MustParse("110")}
	beat := metav1.NewTime(genEpoch)
	if update {
		beat = metav1.NewTime(genEpoch.Add(time.Duration(rv%1_000_000) * time.Second))
	}
	n.Status = v1.NodeStatus{Capacity: capacity, Allocatable: capacity,
		Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: fmt.Sprintf("10.0.%d.%d", i/250%250, i%250)}, {Type: v1.NodeHostName, Address: n.Name}},
		NodeInfo:  v1.NodeSystemInfo{KubeletVersion: "v1.35.0", ContainerRuntimeVersion: "containerd://2.1.0", OSImage: "Ubuntu 24.04", Architecture: "amd64", OperatingSystem: "linux"}}
	for _, c := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure, v1.NodeReady} {
		st := v1.ConditionFalse
		if c == v1.NodeReady {
			st = v1.ConditionTrue
		}
		n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{Type: c, Status: st, LastHeartbeatTime: beat, LastTransitionTime: metav1.NewTime(genEpoch), Reason: "KubeletReady"})
	}
	for k := range 8 {
		n.Status.Images = append(n.Status.Images, v1.ContainerImage{Names: []string{fmt.Sprintf("registry.example.com/platform/image-%d@sha256:%064x", k, k+1)}, SizeBytes: int64(k+1) << 24})
	}
	return n
}

// Namespace is the namespace team-NNN (i below the fake's namespaces).
func Namespace(i, _ int, rv int64, update bool) runtime.Object {
	ns := &v1.Namespace{ObjectMeta: genMeta("team", i, 0, rv, update), Status: v1.NamespaceStatus{Phase: v1.NamespaceActive}}
	ns.Name = fmt.Sprintf("team-%03d", i)
	if update {
		ns.Annotations["bench.boltinformer.io/revision"] = strconv.FormatInt(rv, 10)
	}
	return ns
}

// ServiceAccount is a workload's ServiceAccount.
func ServiceAccount(i, namespaces int, rv int64, update bool) runtime.Object {
	sa := &v1.ServiceAccount{ObjectMeta: genMeta("sa", i, namespaces, rv, update), ImagePullSecrets: []v1.LocalObjectReference{{Name: "registry-credentials"}}}
	if update {
		sa.Annotations["bench.boltinformer.io/revision"] = strconv.FormatInt(rv, 10)
	}
	return sa
}

// Event is a core/v1 Event about a Pod; an update counts it again.
func Event(i, namespaces int, rv int64, update bool) runtime.Object {
	m := genMeta("web", i, namespaces, rv, update)
	m.Name += ".18a7c2f0e1d3b4a5"
	e := &v1.Event{ObjectMeta: m,
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: m.Namespace, Name: fmt.Sprintf("web-%06d", i), UID: types.UID(fmt.Sprintf("0b%06d", i)), APIVersion: "v1", FieldPath: "spec.containers{web}"},
		Reason:         "BackOff", Message: "Back-off restarting failed container web in pod web-" + strconv.Itoa(i), Type: v1.EventTypeWarning,
		Source: v1.EventSource{Component: "kubelet", Host: fmt.Sprintf("node-%03d", i%200)}, FirstTimestamp: m.CreationTimestamp, LastTimestamp: m.CreationTimestamp,
		Count: 1, ReportingController: "kubelet", ReportingInstance: fmt.Sprintf("node-%03d", i%200)}
	if update {
		e.Count = int32(rv%1000) + 2
		e.LastTimestamp = *m.ManagedFields[0].Time
	}
	return e
}

// Widget is the custom resource of the multi scenario (group WidgetGroup),
// served as JSON, as kube-apiserver serves CRDs.
func Widget(i, namespaces int, rv int64, update bool) runtime.Object {
	m := genMeta("widget", i, namespaces, rv, update)
	replicas := int64(i % 5)
	phase := "Ready"
	if update {
		replicas, phase = rv%5, []string{"Ready", "Progressing", "Degraded"}[rv%3]
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"replicas": replicas, "image": fmt.Sprintf("registry.example.com/widgets/w:%d", i%7),
			"config": map[string]any{"tier": "gold", "region": "eu-west-1", "owner": fmt.Sprintf("team-%03d", i%100)}},
		"status": map[string]any{"phase": phase, "observedGeneration": int64(1)},
	}}
	u.SetAPIVersion(WidgetGroup + "/v1")
	u.SetKind("Widget")
	u.SetName(m.Name)
	u.SetNamespace(m.Namespace)
	u.SetUID(m.UID)
	u.SetResourceVersion(m.ResourceVersion)
	u.SetCreationTimestamp(m.CreationTimestamp)
	u.SetLabels(m.Labels)
	u.SetAnnotations(m.Annotations)
	return u
}

// WidgetGroup is the API group of the Widget custom resource.
const WidgetGroup = "bench.boltinformer.io"
