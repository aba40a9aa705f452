package main

// kubectl's columns for the workload kinds: Pod and the apps and batch
// controllers that run pods.

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
)

var podColumns = kindColumns{
	columns: []metav1.TableColumnDefinition{nameCol, col("Ready", "string"), col("Status", "string"), col("Restarts", "string"), col("Age", "string"),
		wideCol("IP", "string"), wideCol("Node", "string"), wideCol("Nominated Node", "string"), wideCol("Readiness Gates", "string")},
	cells: typedCells(podCells),
}

var deploymentColumns = kindColumns{
	columns: []metav1.TableColumnDefinition{nameCol, col("Ready", "string"), col("Up-to-date", "string"), col("Available", "string"), col("Age", "string"),
		wideCol("Containers", "string"), wideCol("Images", "string"), wideCol("Selector", "string")},
	cells: typedCells(func(d *appsv1.Deployment, now time.Time) []interface{} {
		names, images := containerCells(d.Spec.Template.Spec.Containers)
		return []interface{}{d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, deref(d.Spec.Replicas)), int64(d.Status.UpdatedReplicas),
			int64(d.Status.AvailableReplicas), age(d.CreationTimestamp, now), names, images, selectorString(d.Spec.Selector)}
	}),
}

var replicaSetColumns = kindColumns{
	columns: []metav1.TableColumnDefinition{nameCol, col("Desired", "integer"), col("Current", "integer"), col("Ready", "integer"), col("Age", "string"),
		wideCol("Containers", "string"), wideCol("Images", "string"), wideCol("Selector", "string")},
	cells: typedCells(func(rs *appsv1.ReplicaSet, now time.Time) []interface{} {
		names, images := containerCells(rs.Spec.Template.Spec.Containers)
		return []interface{}{rs.Name, int64(deref(rs.Spec.Replicas)), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas),
			age(rs.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(rs.Spec.Selector)}
	}),
}

var statefulSetColumns = kindColumns{
	columns: []metav1.TableColumnDefinition{nameCol, col("Ready", "string"), col("Age", "string"), wideCol("Containers", "string"), wideCol("Images", "string")},
	cells: typedCells(func(s *appsv1.StatefulSet, now time.Time) []interface{} {
		names, images := containerCells(s.Spec.Template.Spec.Containers)
		return []interface{}{s.Name, fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, deref(s.Spec.Replicas)), age(s.CreationTimestamp, now), names, images}
	}),
}

var daemonSetColumns = kindColumns{
	columns: []metav1.TableColumnDefinition{nameCol, col("Desired", "integer"), col("Current", "integer"), col("Ready", "integer"), col("Up-to-date", "integer"),
		col("Available", "integer"), col("Node Selector", "string"), col("Age", "string"), wideCol("Containers", "string"), wideCol("Images", "string"), wideCol("Selector", "string")},
	cells: typedCells(func(d *appsv1.DaemonSet, now time.Time) []interface{} {
		names, images := containerCells(d.Spec.Template.Spec.Containers)
		return []interface{}{d.Name, int64(d.Status.DesiredNumberScheduled), int64(d.Status.CurrentNumberScheduled), int64(d.Status.NumberReady),
			int64(d.Status.UpdatedNumberScheduled), int64(d.Status.NumberAvailable), labels.FormatLabels(d.Spec.Template.Spec.NodeSelector),
			age(d.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(d.Spec.Selector)}
	}),
}

var jobColumns = kindColumns{
	columns: []metav1.TableColumnDefinition{nameCol, col("Status", "string"), col("Completions", "string"), col("Duration", "string"), col("Age", "string"),
		wideCol("Containers", "string"), wideCol("Images", "string"), wideCol("Selector", "string")},
	cells: typedCells(jobCells),
}

var cronJobColumns = kindColumns{
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

// containerCells joins the names and images of containers with commas.
func containerCells(cs []v1.Container) (names, images string) {
	n, i := make([]string, len(cs)), make([]string, len(cs))
	for k, c := range cs {
		n[k], i[k] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(i, ",")
}

// selectorString is a Deployment's selector as kubectl prints it ("<invalid>" when it does not convert).
func selectorString(s *metav1.LabelSelector) string {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return "<invalid>"
	}
	return sel.String()
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
