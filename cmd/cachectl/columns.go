package main

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
)

// The default columns of kubectl get for the built-in kinds, derived from
// the semantics of the apiserver's table printers (kubernetes
// pkg/printers/internalversion) without depending on k8s.io/kubernetes:
// the same column names, priorities (1: only with -o wide) and cell
// rules, applied to the v1 types the cache stores. A kind without an
// entry gets kubectl's default for types without printer columns: NAME
// and AGE (plus RESOURCEVERSION, UID and OWNER with -o wide).

// kindColumns are the table columns of one kind and how to fill a row.
type kindColumns struct {
	columns []metav1.TableColumnDefinition
	// cells returns one cell per column (wide ones included: the table
	// printer drops priority-1 columns unless -o wide).
	cells func(u *unstructured.Unstructured, now time.Time) ([]interface{}, error)
}

// typedCells converts the unstructured object to its v1 Go type and fills
// the row from it.
func typedCells[T any, PT interface {
	*T
	runtime.Object
}](fn func(obj PT, now time.Time) []interface{}) func(*unstructured.Unstructured, time.Time) ([]interface{}, error) {
	return func(u *unstructured.Unstructured, now time.Time) ([]interface{}, error) {
		obj := PT(new(T))
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
			return nil, fmt.Errorf("%s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
		return fn(obj, now), nil
	}
}

func col(name, typ string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ}
}

func wideCol(name, typ string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Priority: 1}
}

var nameCol = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name"}

// builtinColumns maps a built-in kind to its kubectl columns.
var builtinColumns = map[schema.GroupKind]kindColumns{
	{Kind: "Pod"}: {
		columns: []metav1.TableColumnDefinition{nameCol, col("Ready", "string"), col("Status", "string"), col("Restarts", "string"), col("Age", "string"),
			wideCol("IP", "string"), wideCol("Node", "string"), wideCol("Nominated Node", "string"), wideCol("Readiness Gates", "string")},
		cells: typedCells(podCells),
	},
	{Group: "apps", Kind: "Deployment"}: {
		columns: []metav1.TableColumnDefinition{nameCol, col("Ready", "string"), col("Up-to-date", "string"), col("Available", "string"), col("Age", "string"),
			wideCol("Containers", "string"), wideCol("Images", "string"), wideCol("Selector", "string")},
		cells: typedCells(func(d *appsv1.Deployment, now time.Time) []interface{} {
			names, images := containerCells(d.Spec.Template.Spec.Containers)
			return []interface{}{d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, deref(d.Spec.Replicas)), int64(d.Status.UpdatedReplicas),
				int64(d.Status.AvailableReplicas), age(d.CreationTimestamp, now), names, images, selectorString(d.Spec.Selector)}
		}),
	},
	{Group: "apps", Kind: "ReplicaSet"}: {
		columns: []metav1.TableColumnDefinition{nameCol, col("Desired", "integer"), col("Current", "integer"), col("Ready", "integer"), col("Age", "string"),
			wideCol("Containers", "string"), wideCol("Images", "string"), wideCol("Selector", "string")},
		cells: typedCells(func(rs *appsv1.ReplicaSet, now time.Time) []interface{} {
			names, images := containerCells(rs.Spec.Template.Spec.Containers)
			return []interface{}{rs.Name, int64(deref(rs.Spec.Replicas)), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas),
				age(rs.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(rs.Spec.Selector)}
		}),
	},
	{Group: "apps", Kind: "StatefulSet"}: {
		columns: []metav1.TableColumnDefinition{nameCol, col("Ready", "string"), col("Age", "string"), wideCol("Containers", "string"), wideCol("Images", "string")},
		cells: typedCells(func(s *appsv1.StatefulSet, now time.Time) []interface{} {
			names, images := containerCells(s.Spec.Template.Spec.Containers)
			return []interface{}{s.Name, fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, deref(s.Spec.Replicas)), age(s.CreationTimestamp, now), names, images}
		}),
	},
	{Group: "apps", Kind: "DaemonSet"}: {
		columns: []metav1.TableColumnDefinition{nameCol, col("Desired", "integer"), col("Current", "integer"), col("Ready", "integer"), col("Up-to-date", "integer"),
			col("Available", "integer"), col("Node Selector", "string"), col("Age", "string"), wideCol("Containers", "string"), wideCol("Images", "string"), wideCol("Selector", "string")},
		cells: typedCells(func(d *appsv1.DaemonSet, now time.Time) []interface{} {
			names, images := containerCells(d.Spec.Template.Spec.Containers)
			return []interface{}{d.Name, int64(d.Status.DesiredNumberScheduled), int64(d.Status.CurrentNumberScheduled), int64(d.Status.NumberReady),
				int64(d.Status.UpdatedNumberScheduled), int64(d.Status.NumberAvailable), labels.FormatLabels(d.Spec.Template.Spec.NodeSelector),
				age(d.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(d.Spec.Selector)}
		}),
	},
	{Group: "batch", Kind: "Job"}: {
		columns: []metav1.TableColumnDefinition{nameCol, col("Status", "string"), col("Completions", "string"), col("Duration", "string"), col("Age", "string"),
			wideCol("Containers", "string"), wideCol("Images", "string"), wideCol("Selector", "string")},
		cells: typedCells(jobCells),
	},
	{Group: "batch", Kind: "CronJob"}: {
		columns: []metav1.TableColumnDefinition{nameCol, col("Schedule", "string"), col("Timezone", "string"), col("Suspend", "boolean"), col("Active", "integer"),
			col("Last Schedule", "string"), col("Age", "string"), wideCol("Containers", "string"), wideCol("Images", "string"), wideCol("Selector", "string")},
		cells: typedCells(func(c *batchv1.CronJob, now time.Time) []interface{} {
			last := "<none>"
			if c.Status.LastScheduleTime != nil {
				last = age(*c.Status.LastScheduleTime, now)
			}
			tz := "<none>"
			if c.Spec.TimeZone != nil {
				tz = *c.Spec.TimeZone
			}
			names, images := containerCells(c.Spec.JobTemplate.Spec.Template.Spec.Containers)
			return []interface{}{c.Name, c.Spec.Schedule, tz, boolPtr(c.Spec.Suspend), int64(len(c.Status.Active)), last, age(c.CreationTimestamp, now),
				names, images, metav1.FormatLabelSelector(c.Spec.JobTemplate.Spec.Selector)}
		}),
	},
	{Kind: "Service"}: {
		columns: []metav1.TableColumnDefinition{nameCol, col("Type", "string"), col("Cluster-IP", "string"), col("External-IP", "string"), col("Port(s)", "string"),
			col("Age", "string"), wideCol("Selector", "string")},
		cells: typedCells(serviceCells),
	},
	{Kind: "Node"}: {
		columns: []metav1.TableColumnDefinition{nameCol, col("Status", "string"), col("Roles", "string"), col("Age", "string"), col("Version", "string"),
			wideCol("Internal-IP", "string"), wideCol("External-IP", "string"), wideCol("OS-Image", "string"), wideCol("Kernel-Version", "string"), wideCol("Container-Runtime", "string")},
		cells: typedCells(nodeCells),
	},
	{Kind: "Namespace"}: {
		columns: []metav1.TableColumnDefinition{nameCol, col("Status", "string"), col("Age", "string")},
		cells: typedCells(func(n *v1.Namespace, now time.Time) []interface{} {
			return []interface{}{n.Name, string(n.Status.Phase), age(n.CreationTimestamp, now)}
		}),
	},
	{Kind: "ConfigMap"}: {
		columns: []metav1.TableColumnDefinition{nameCol, col("Data", "string"), col("Age", "string")},
		cells: typedCells(func(c *v1.ConfigMap, now time.Time) []interface{} {
			return []interface{}{c.Name, int64(len(c.Data) + len(c.BinaryData)), age(c.CreationTimestamp, now)}
		}),
	},
	{Kind: "Secret"}: {
		columns: []metav1.TableColumnDefinition{nameCol, col("Type", "string"), col("Data", "string"), col("Age", "string")},
		// Read unconverted: redacted data need not be base64.
		cells: func(u *unstructured.Unstructured, now time.Time) ([]interface{}, error) {
			typ, _, _ := unstructured.NestedString(u.Object, "type")
			data, _, _ := unstructured.NestedMap(u.Object, "data")
			return []interface{}{u.GetName(), typ, int64(len(data)), age(u.GetCreationTimestamp(), now)}, nil
		},
	},
	{Kind: "ServiceAccount"}: {
		columns: []metav1.TableColumnDefinition{nameCol, col("Age", "string")},
		cells: typedCells(func(s *v1.ServiceAccount, now time.Time) []interface{} {
			return []interface{}{s.Name, age(s.CreationTimestamp, now)}
		}),
	},
	{Kind: "Endpoints"}: {
		columns: []metav1.TableColumnDefinition{nameCol, col("Endpoints", "string"), col("Age", "string")},
		cells: typedCells(func(e *v1.Endpoints, now time.Time) []interface{} {
			return []interface{}{e.Name, endpointsCell(e), age(e.CreationTimestamp, now)}
		}),
	},
	{Group: "discovery.k8s.io", Kind: "EndpointSlice"}: {
		columns: []metav1.TableColumnDefinition{nameCol, col("AddressType", "string"), col("Ports", "string"), col("Endpoints", "string"), col("Age", "string")},
		cells: typedCells(func(e *discoveryv1.EndpointSlice, now time.Time) []interface{} {
			var ports, addrs []string
			for _, p := range e.Ports {
				switch {
				case p.Port != nil:
					ports = append(ports, strconv.Itoa(int(*p.Port)))
				case p.Name != nil:
					ports = append(ports, *p.Name)
				default:
					ports = append(ports, "*")
				}
			}
			for _, ep := range e.Endpoints {
				addrs = append(addrs, ep.Addresses...)
			}
			return []interface{}{e.Name, string(e.AddressType), firstThree(ports, "<unset>"), firstThree(addrs, "<unset>"), age(e.CreationTimestamp, now)}
		}),
	},
	{Kind: "PersistentVolume"}: {
		columns: []metav1.TableColumnDefinition{nameCol, col("Capacity", "string"), col("Access Modes", "string"), col("Reclaim Policy", "string"), col("Status", "string"),
			col("Claim", "string"), col("StorageClass", "string"), col("VolumeAttributesClass", "string"), col("Reason", "string"), col("Age", "string"), wideCol("VolumeMode", "string")},
		cells: typedCells(func(pv *v1.PersistentVolume, now time.Time) []interface{} {
			claim := ""
			if pv.Spec.ClaimRef != nil {
				claim = pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name
			}
			phase := string(pv.Status.Phase)
			if pv.DeletionTimestamp != nil {
				phase = "Terminating"
			}
			class := pv.Spec.StorageClassName
			if c, ok := pv.Annotations[v1.BetaStorageClassAnnotation]; ok {
				class = c
			}
			capacity := pv.Spec.Capacity[v1.ResourceStorage]
			return []interface{}{pv.Name, capacity.String(), accessModes(pv.Spec.AccessModes), string(pv.Spec.PersistentVolumeReclaimPolicy), phase, claim,
				class, unset(pv.Spec.VolumeAttributesClassName), pv.Status.Reason, age(pv.CreationTimestamp, now), volumeMode(pv.Spec.VolumeMode)}
		}),
	},
	{Kind: "PersistentVolumeClaim"}: {
		columns: []metav1.TableColumnDefinition{nameCol, col("Status", "string"), col("Volume", "string"), col("Capacity", "string"), col("Access Modes", "string"),
			col("StorageClass", "string"), col("VolumeAttributesClass", "string"), col("Age", "string"), wideCol("VolumeMode", "string")},
		cells: typedCells(func(pvc *v1.PersistentVolumeClaim, now time.Time) []interface{} {
			phase := string(pvc.Status.Phase)
			if pvc.DeletionTimestamp != nil {
				phase = "Terminating"
			}
			capacity, modes := "", ""
			if pvc.Spec.VolumeName != "" {
				modes = accessModes(pvc.Status.AccessModes)
				q := pvc.Status.Capacity[v1.ResourceStorage]
				capacity = q.String()
			}
			class := ""
			if pvc.Spec.StorageClassName != nil {
				class = *pvc.Spec.StorageClassName
			}
			if c, ok := pvc.Annotations[v1.BetaStorageClassAnnotation]; ok {
				class = c
			}
			return []interface{}{pvc.Name, phase, pvc.Spec.VolumeName, capacity, modes, class, unset(pvc.Spec.VolumeAttributesClassName),
				age(pvc.CreationTimestamp, now), volumeMode(pvc.Spec.VolumeMode)}
		}),
	},
	{Kind: "Event"}: {
		columns: []metav1.TableColumnDefinition{col("Last Seen", "string"), col("Type", "string"), col("Reason", "string"), col("Object", "string"),
			wideCol("Subobject", "string"), wideCol("Source", "string"), col("Message", "string"), wideCol("First Seen", "string"), wideCol("Count", "string"),
			{Name: "Name", Type: "string", Format: "name", Priority: 1}},
		cells: typedCells(eventCells),
	},
	{Group: "networking.k8s.io", Kind: "Ingress"}: {
		columns: []metav1.TableColumnDefinition{nameCol, col("Class", "string"), col("Hosts", "string"), col("Address", "string"), col("Ports", "string"), col("Age", "string")},
		cells:   typedCells(ingressCells),
	},
}

// columnsFor returns the kubectl columns of a kind, if it has any.
func columnsFor(gk schema.GroupKind) (kindColumns, bool) {
	c, ok := builtinColumns[gk]
	return c, ok
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func boolPtr(b *bool) string {
	switch {
	case b == nil:
		return "<unset>"
	case *b:
		return "True"
	}
	return "False"
}

func unset(s *string) string {
	if s == nil {
		return "<unset>"
	}
	return *s
}

func volumeMode(m *v1.PersistentVolumeMode) string {
	if m == nil {
		return "<unset>"
	}
	return string(*m)
}

// selectorString is a Deployment's selector as kubectl prints it ("<invalid>" when it does not convert).
func selectorString(s *metav1.LabelSelector) string {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return "<invalid>"
	}
	return sel.String()
}

// containerCells joins the names and images of containers with commas.
func containerCells(cs []v1.Container) (names, images string) {
	n, i := make([]string, len(cs)), make([]string, len(cs))
	for k, c := range cs {
		n[k], i[k] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(i, ",")
}

// accessModes abbreviates access modes in kubectl's fixed order, without duplicates.
func accessModes(modes []v1.PersistentVolumeAccessMode) string {
	has := map[v1.PersistentVolumeAccessMode]bool{}
	for _, m := range modes {
		has[m] = true
	}
	var out []string
	for _, m := range []struct {
		mode v1.PersistentVolumeAccessMode
		abbr string
	}{{v1.ReadWriteOnce, "RWO"}, {v1.ReadOnlyMany, "ROX"}, {v1.ReadWriteMany, "RWX"}, {v1.ReadWriteOncePod, "RWOP"}} {
		if has[m.mode] {
			out = append(out, m.abbr)
		}
	}
	return strings.Join(out, ",")
}

// firstThree lists up to three values and says how many more there are.
func firstThree(list []string, empty string) string {
	const max = 3
	switch {
	case len(list) == 0:
		return empty
	case len(list) > max:
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:max], ","), len(list)-max)
	}
	return strings.Join(list, ",")
}

// podCells are kubectl's Pod columns: READY counts ready containers
// (restartable init containers included), STATUS is the most telling
// reason (init progress, a waiting or terminated container, Terminating),
// RESTARTS adds "(X ago)" from the last container termination.
func podCells(pod *v1.Pod, now time.Time) []interface{} {
	restarts, sidecarRestarts := 0, 0
	total := len(pod.Spec.Containers)
	ready := 0
	var lastRestart, lastSidecarRestart time.Time
	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Reason == v1.PodReasonSchedulingGated {
			reason = v1.PodReasonSchedulingGated
		}
	}
	sidecar := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			sidecar[c.Name] = true
			total++
		}
	}
	later := func(t *time.Time, st v1.ContainerStatus) {
		if term := st.LastTerminationState.Terminated; term != nil && term.FinishedAt.After(*t) {
			*t = term.FinishedAt.Time
		}
	}
	initializing := false
	for i, st := range pod.Status.InitContainerStatuses {
		restarts += int(st.RestartCount)
		later(&lastRestart, st)
		if sidecar[st.Name] {
			sidecarRestarts += int(st.RestartCount)
			later(&lastSidecarRestart, st)
		}
		term, wait := st.State.Terminated, st.State.Waiting
		switch {
		case term != nil && term.ExitCode == 0:
			continue
		case sidecar[st.Name] && st.Started != nil && *st.Started:
			if st.Ready {
				ready++
			}
			continue
		case term != nil:
			switch {
			case term.Reason != "":
				reason = "Init:" + term.Reason
			case term.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", term.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", term.ExitCode)
			}
		case wait != nil && wait.Reason != "" && wait.Reason != "PodInitializing":
			reason = "Init:" + wait.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		initializing = true
		break
	}
	if !initializing || podCondition(pod, v1.PodInitialized) {
		restarts, lastRestart = sidecarRestarts, lastSidecarRestart
		hasRunning := false
		errorReason := ""
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			st := pod.Status.ContainerStatuses[i]
			restarts += int(st.RestartCount)
			later(&lastRestart, st)
			switch {
			case st.State.Waiting != nil && st.State.Waiting.Reason != "":
				reason = st.State.Waiting.Reason
			case st.State.Terminated != nil:
				term := st.State.Terminated
				switch {
				case term.Reason != "":
					reason = term.Reason
				case term.Signal != 0:
					reason = fmt.Sprintf("Signal:%d", term.Signal)
				default:
					reason = fmt.Sprintf("ExitCode:%d", term.ExitCode)
				}
				if term.ExitCode != 0 {
					errorReason = reason
				}
			case st.Ready && st.State.Running != nil:
				hasRunning = true
				ready++
			}
		}
		if reason == "Completed" {
			switch {
			case hasRunning && podCondition(pod, v1.PodReady):
				reason = "Running"
			case errorReason != "":
				reason = errorReason
			case hasRunning:
				reason = "NotReady"
			}
		}
	}
	if pod.DeletionTimestamp != nil {
		switch {
		case pod.Status.Reason == "NodeLost":
			reason = "Unknown"
		case pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed:
			reason = "Terminating"
		}
	}
	restartCell := strconv.Itoa(restarts)
	if restarts != 0 && !lastRestart.IsZero() {
		restartCell = fmt.Sprintf("%d (%s ago)", restarts, duration.HumanDuration(now.Sub(lastRestart)))
	}
	ip := ""
	if len(pod.Status.PodIPs) > 0 {
		ip = pod.Status.PodIPs[0].IP
	}
	gates := "<none>"
	if len(pod.Spec.ReadinessGates) > 0 {
		met := 0
		for _, g := range pod.Spec.ReadinessGates {
			if podCondition(pod, g.ConditionType) {
				met++
			}
		}
		gates = fmt.Sprintf("%d/%d", met, len(pod.Spec.ReadinessGates))
	}
	return []interface{}{pod.Name, fmt.Sprintf("%d/%d", ready, total), reason, restartCell, age(pod.CreationTimestamp, now),
		orNone(ip), orNone(pod.Spec.NodeName), orNone(pod.Status.NominatedNodeName), gates}
}

// podCondition reports whether the pod's first condition of type t is True.
func podCondition(pod *v1.Pod, t v1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func jobCondition(j *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == t {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func jobCells(j *batchv1.Job, now time.Time) []interface{} {
	var completions string
	switch {
	case j.Spec.Completions != nil:
		completions = fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	case deref(j.Spec.Parallelism) > 1:
		completions = fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, *j.Spec.Parallelism)
	default:
		completions = fmt.Sprintf("%d/1", j.Status.Succeeded)
	}
	var took string
	switch {
	case j.Status.StartTime == nil:
	case j.Status.CompletionTime == nil:
		took = duration.HumanDuration(now.Sub(j.Status.StartTime.Time))
	default:
		took = duration.HumanDuration(j.Status.CompletionTime.Sub(j.Status.StartTime.Time))
	}
	status := "Running"
	switch {
	case jobCondition(j, batchv1.JobComplete):
		status = "Complete"
	case jobCondition(j, batchv1.JobFailed):
		status = "Failed"
	case j.DeletionTimestamp != nil:
		status = "Terminating"
	case jobCondition(j, batchv1.JobSuspended):
		status = "Suspended"
	case jobCondition(j, batchv1.JobFailureTarget):
		status = "FailureTarget"
	case jobCondition(j, batchv1.JobSuccessCriteriaMet):
		status = "SuccessCriteriaMet"
	}
	names, images := containerCells(j.Spec.Template.Spec.Containers)
	return []interface{}{j.Name, status, completions, took, age(j.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(j.Spec.Selector)}
}

// lbAddresses lists the distinct IPs (or hostnames) of load balancer
// ingress points, sorted. The apiserver builds every table as wide (the
// client drops priority-1 columns), so kubectl never sees the list cut.
func lbAddresses(ips, hosts []string) string {
	set := map[string]bool{}
	for i := range ips {
		switch {
		case ips[i] != "":
			set[ips[i]] = true
		case hosts[i] != "":
			set[hosts[i]] = true
		}
	}
	list := make([]string, 0, len(set))
	for s := range set {
		list = append(list, s)
	}
	sort.Strings(list)
	return strings.Join(list, ",")
}

// serviceExternalIP is kubectl's EXTERNAL-IP.
func serviceExternalIP(svc *v1.Service) string {
	switch svc.Spec.Type {
	case v1.ServiceTypeClusterIP, v1.ServiceTypeNodePort:
		if len(svc.Spec.ExternalIPs) > 0 {
			return strings.Join(svc.Spec.ExternalIPs, ",")
		}
		return "<none>"
	case v1.ServiceTypeLoadBalancer:
		ips, hosts := make([]string, len(svc.Status.LoadBalancer.Ingress)), make([]string, len(svc.Status.LoadBalancer.Ingress))
		for i, in := range svc.Status.LoadBalancer.Ingress {
			ips[i], hosts[i] = in.IP, in.Hostname
		}
		lb := lbAddresses(ips, hosts)
		if len(svc.Spec.ExternalIPs) > 0 {
			var all []string
			if lb != "" {
				all = strings.Split(lb, ",")
			}
			return strings.Join(append(all, svc.Spec.ExternalIPs...), ",")
		}
		if lb != "" {
			return lb
		}
		return "<pending>"
	case v1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return "<unknown>"
}

func serviceCells(svc *v1.Service, now time.Time) []interface{} {
	clusterIP := "<none>"
	if len(svc.Spec.ClusterIPs) > 0 {
		clusterIP = svc.Spec.ClusterIPs[0]
	}
	ports := make([]string, len(svc.Spec.Ports))
	for i, p := range svc.Spec.Ports {
		ports[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if p.NodePort > 0 {
			ports[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		}
	}
	portCell := strings.Join(ports, ",")
	if portCell == "" {
		portCell = "<none>"
	}
	return []interface{}{svc.Name, string(svc.Spec.Type), clusterIP, serviceExternalIP(svc), portCell, age(svc.CreationTimestamp, now),
		labels.FormatLabels(svc.Spec.Selector)}
}

func nodeCells(n *v1.Node, now time.Time) []interface{} {
	var status []string
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			if c.Status == v1.ConditionTrue {
				status = []string{"Ready"}
			} else {
				status = []string{"NotReady"}
			}
		}
	}
	if len(status) == 0 {
		status = []string{"Unknown"}
	}
	if n.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}
	roleSet := map[string]bool{}
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, "node-role.kubernetes.io/"):
			if r := strings.TrimPrefix(k, "node-role.kubernetes.io/"); r != "" {
				roleSet[r] = true
			}
		case k == "kubernetes.io/role" && v != "":
			roleSet[v] = true
		}
	}
	roles := make([]string, 0, len(roleSet))
	for r := range roleSet {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	info := n.Status.NodeInfo
	kernel := orUnknown(info.KernelVersion)
	if info.Architecture != "" {
		kernel += " (" + info.Architecture + ")"
	}
	address := func(t v1.NodeAddressType) string {
		for _, a := range n.Status.Addresses {
			if a.Type == t {
				return a.Address
			}
		}
		return "<none>"
	}
	return []interface{}{n.Name, strings.Join(status, ","), orNone(strings.Join(roles, ",")), age(n.CreationTimestamp, now), info.KubeletVersion,
		address(v1.NodeInternalIP), address(v1.NodeExternalIP), orUnknown(info.OSImage), kernel, orUnknown(info.ContainerRuntimeVersion)}
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}

// endpointsCell lists up to three ip:port (ip alone for a subset without ports).
func endpointsCell(e *v1.Endpoints) string {
	if len(e.Subsets) == 0 {
		return "<none>"
	}
	var list []string
	for _, ss := range e.Subsets {
		if len(ss.Ports) == 0 {
			for _, a := range ss.Addresses {
				list = append(list, a.IP)
			}
			continue
		}
		for _, p := range ss.Ports {
			for _, a := range ss.Addresses {
				list = append(list, net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
	}
	return firstThree(list, "")
}

func eventCells(e *v1.Event, now time.Time) []interface{} {
	since := func(t time.Time) string {
		if t.IsZero() {
			return "<unknown>"
		}
		return duration.HumanDuration(now.Sub(t))
	}
	first := since(e.FirstTimestamp.Time)
	if e.FirstTimestamp.IsZero() {
		first = since(e.EventTime.Time)
	}
	last := since(e.LastTimestamp.Time)
	if e.LastTimestamp.IsZero() {
		last = first
	}
	count := e.Count
	if e.Series != nil {
		last = since(e.Series.LastObservedTime.Time)
		count = e.Series.Count
	} else if count == 0 {
		count = 1
	}
	target := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		target += "/" + e.InvolvedObject.Name
	}
	component, instance := e.Source.Component, e.Source.Host
	if component == "" {
		component = e.ReportingController
	}
	if instance == "" {
		instance = e.ReportingInstance
	}
	source := component
	if instance != "" {
		source += ", " + instance
	}
	return []interface{}{last, e.Type, e.Reason, target, e.InvolvedObject.FieldPath, source, strings.TrimSpace(e.Message), first, int64(count), e.Name}
}

func ingressCells(in *networkingv1.Ingress, now time.Time) []interface{} {
	class := "<none>"
	if in.Spec.IngressClassName != nil {
		class = *in.Spec.IngressClassName
	}
	// Up to three hosts; once three are listed, any further rule (with a
	// host or not) makes "+ N more..." with N counted in rules.
	var hosts []string
	more := false
	for _, r := range in.Spec.Rules {
		if len(hosts) == 3 {
			more = true
		}
		if !more && r.Host != "" {
			hosts = append(hosts, r.Host)
		}
	}
	hostCell := "*"
	switch {
	case more:
		hostCell = fmt.Sprintf("%s + %d more...", strings.Join(hosts, ","), len(in.Spec.Rules)-3)
	case len(hosts) > 0:
		hostCell = strings.Join(hosts, ",")
	}
	ips, hs := make([]string, len(in.Status.LoadBalancer.Ingress)), make([]string, len(in.Status.LoadBalancer.Ingress))
	for i, lb := range in.Status.LoadBalancer.Ingress {
		ips[i], hs[i] = lb.IP, lb.Hostname
	}
	ports := "80"
	if len(in.Spec.TLS) > 0 {
		ports = "80, 443"
	}
	return []interface{}{in.Name, class, hostCell, lbAddresses(ips, hs), ports, age(in.CreationTimestamp, now)}
}
