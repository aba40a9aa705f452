package main

// kubectl's columns for the network kinds: Service, Endpoints,
// EndpointSlice and Ingress.

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

var serviceColumns = kindColumns{
	columns: []metav1.TableColumnDefinition{nameCol, col("Type", "string"), col("Cluster-IP", "string"), col("External-IP", "string"), col("Port(s)", "string"),
		col("Age", "string"), wideCol("Selector", "string")},
	cells: typedCells(serviceCells),
}

var endpointsColumns = kindColumns{
	columns: []metav1.TableColumnDefinition{nameCol, col("Endpoints", "string"), col("Age", "string")},
	cells: typedCells(func(e *v1.Endpoints, now time.Time) []interface{} {
		return []interface{}{e.Name, endpointsCell(e), age(e.CreationTimestamp, now)}
	}),
}

var endpointSliceColumns = kindColumns{
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
}

var ingressColumns = kindColumns{
	columns: []metav1.TableColumnDefinition{nameCol, col("Class", "string"), col("Hosts", "string"), col("Address", "string"), col("Ports", "string"), col("Age", "string")},
	cells:   typedCells(ingressCells),
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
