package main

// kubectl's columns for the core kinds that describe the cluster and its
// configuration: Node, Namespace, ConfigMap, Secret, ServiceAccount, Event.

import (
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

var nodeColumns = kindColumns{
	columns: []metav1.TableColumnDefinition{nameCol, col("Status", "string"), col("Roles", "string"), col("Age", "string"), col("Version", "string"),
		wideCol("Internal-IP", "string"), wideCol("External-IP", "string"), wideCol("OS-Image", "string"), wideCol("Kernel-Version", "string"), wideCol("Container-Runtime", "string")},
	cells: typedCells(nodeCells),
}

var namespaceColumns = kindColumns{
	columns: []metav1.TableColumnDefinition{nameCol, col("Status", "string"), col("Age", "string")},
	cells: typedCells(func(n *v1.Namespace, now time.Time) []interface{} {
		return []interface{}{n.Name, string(n.Status.Phase), age(n.CreationTimestamp, now)}
	}),
}

var configMapColumns = kindColumns{
	columns: []metav1.TableColumnDefinition{nameCol, col("Data", "string"), col("Age", "string")},
	cells: typedCells(func(c *v1.ConfigMap, now time.Time) []interface{} {
		return []interface{}{c.Name, int64(len(c.Data) + len(c.BinaryData)), age(c.CreationTimestamp, now)}
	}),
}

var secretColumns = kindColumns{
	columns: []metav1.TableColumnDefinition{nameCol, col("Type", "string"), col("Data", "string"), col("Age", "string")},
	cells: cellRule{
		// Read unconverted: redacted data need not be base64.
		unstructured: func(u *unstructured.Unstructured, now time.Time) ([]interface{}, error) {
			typ, _, _ := unstructured.NestedString(u.Object, "type")
			data, _, _ := unstructured.NestedMap(u.Object, "data")
			return []interface{}{u.GetName(), typ, int64(len(data)), age(u.GetCreationTimestamp(), now)}, nil
		},
		typed: func(obj runtime.Object, now time.Time) ([]interface{}, bool) {
			s, ok := obj.(*v1.Secret)
			if !ok {
				return nil, false
			}
			return []interface{}{s.Name, string(s.Type), int64(len(s.Data)), age(s.CreationTimestamp, now)}, true
		},
	},
}

var serviceAccountColumns = kindColumns{
	columns: []metav1.TableColumnDefinition{nameCol, col("Age", "string")},
	cells: typedCells(func(s *v1.ServiceAccount, now time.Time) []interface{} {
		return []interface{}{s.Name, age(s.CreationTimestamp, now)}
	}),
}

var eventColumns = kindColumns{
	columns: []metav1.TableColumnDefinition{col("Last Seen", "string"), col("Type", "string"), col("Reason", "string"), col("Object", "string"),
		wideCol("Subobject", "string"), wideCol("Source", "string"), col("Message", "string"), wideCol("First Seen", "string"), wideCol("Count", "string"),
		{Name: "Name", Type: "string", Format: "name", Priority: 1}},
	cells: typedCells(eventCells),
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
