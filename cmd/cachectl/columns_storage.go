package main

// kubectl's columns for the storage kinds: PersistentVolume and
// PersistentVolumeClaim.

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var persistentVolumeColumns = kindColumns{
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
}

var persistentVolumeClaimColumns = kindColumns{
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

func volumeMode(m *v1.PersistentVolumeMode) string {
	if m == nil {
		return "<unset>"
	}
	return string(*m)
}

func unset(s *string) string {
	if s == nil {
		return "<unset>"
	}
	return *s
}
