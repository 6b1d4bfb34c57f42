package deploy

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

const manifestPath = "kubernetes/lockd.yaml"

// manifests are the decoded objects of lockd.yaml.
type manifests struct {
	configMaps map[string]*corev1.ConfigMap
	services   map[string]*corev1.Service
	pdbs       []*policyv1.PodDisruptionBudget
	sts        *appsv1.StatefulSet
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

// loadManifests decodes every document of lockd.yaml strictly into its
// Kubernetes API type: an unknown or misspelt field, a duplicate key or a
// value of the wrong type fails.
func loadManifests(t *testing.T) manifests {
	t.Helper()
	m := manifests{configMaps: map[string]*corev1.ConfigMap{}, services: map[string]*corev1.Service{}}
	for i, doc := range docSep.Split(string(readFile(t, manifestPath)), -1) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("%s: document %d: %v", manifestPath, i, err)
		}
		if tm.Kind == "" {
			continue // comments only
		}
		var obj interface{ GetName() string }
		want := ""
		switch tm.Kind {
		case "ConfigMap":
			obj, want = &corev1.ConfigMap{}, "v1"
		case "Service":
			obj, want = &corev1.Service{}, "v1"
		case "PodDisruptionBudget":
			obj, want = &policyv1.PodDisruptionBudget{}, "policy/v1"
		case "StatefulSet":
			obj, want = &appsv1.StatefulSet{}, "apps/v1"
		default:
			t.Fatalf("%s: document %d: kind %s is not checked by this test", manifestPath, i, tm.Kind)
		}
		if tm.APIVersion != want {
			t.Errorf("%s: %s has apiVersion %q, want %q", manifestPath, tm.Kind, tm.APIVersion, want)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("%s: %s (document %d): %v", manifestPath, tm.Kind, i, err)
		}
		if errs := validation.IsDNS1123Label(obj.GetName()); len(errs) > 0 {
			t.Errorf("%s %q: %s", tm.Kind, obj.GetName(), strings.Join(errs, "; "))
		}
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			m.configMaps[o.Name] = o
		case *corev1.Service:
			m.services[o.Name] = o
		case *policyv1.PodDisruptionBudget:
			m.pdbs = append(m.pdbs, o)
		case *appsv1.StatefulSet:
			if m.sts != nil {
				t.Fatalf("%s: two StatefulSets", manifestPath)
			}
			m.sts = o
		}
	}
	if m.sts == nil {
		t.Fatalf("%s: no StatefulSet", manifestPath)
	}
	return m
}

// selects reports whether a selector's labels are all among labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TestKubernetesManifests: the StatefulSet runs 3 replicas behind a headless
// Service, with a client Service, probes on /readyz and /healthz, a
// PodDisruptionBudget of one, hard anti-affinity per machine, a volume per
// pod, and a grace period above lockd's 20 s shutdown bound; and the pieces
// refer to each other correctly (selectors, ports, names, mounts).
func TestKubernetesManifests(t *testing.T) {
	m := loadManifests(t)
	sts := m.sts
	pod := sts.Spec.Template
	podLabels := pod.Labels

	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 3 {
		t.Errorf("replicas = %d, want 3", deref(sts.Spec.Replicas))
	}
	if sts.Spec.Selector == nil || !selects(sts.Spec.Selector.MatchLabels, podLabels) || len(sts.Spec.Selector.MatchExpressions) > 0 {
		t.Errorf("the StatefulSet's selector does not select its pods")
	}
	if sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("podManagementPolicy = %q, want Parallel (a pod without quorum must not block the recreation of the others)", sts.Spec.PodManagementPolicy)
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || *g <= 20 {
		t.Errorf("terminationGracePeriodSeconds = %d, want above lockd's 20 s shutdown bound", deref(g))
	}

	// Services: the headless one the StatefulSet names, and a client one.
	headless, ok := m.services[sts.Spec.ServiceName]
	if !ok {
		t.Fatalf("serviceName %q names no Service in %s", sts.Spec.ServiceName, manifestPath)
	}
	if headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("Service %s: want clusterIP None and publishNotReadyAddresses (peers must reach a node before it is ready)", headless.Name)
	}
	client, ok := m.services["lockd"]
	if !ok || client.Spec.ClusterIP == corev1.ClusterIPNone {
		t.Fatalf("no client Service \"lockd\" with a cluster IP")
	}
	if len(m.services) != 2 {
		t.Errorf("want exactly the headless and the client Service, have %v", sortedKeys(m.services))
	}

	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("want one container, have %d", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if !reflect.DeepEqual(ports, map[string]int32{"resp": 6379, "peer": 7379, "http": 8379}) {
		t.Errorf("container ports %v, want resp 6379, peer 7379, http 8379 (DESIGN.md §6)", ports)
	}
	for _, svc := range m.services {
		if !selects(svc.Spec.Selector, podLabels) {
			t.Errorf("Service %s does not select the StatefulSet's pods", svc.Name)
		}
		for _, p := range svc.Spec.Ports {
			if p.TargetPort.Type != intstr.String || ports[p.TargetPort.StrVal] != p.Port {
				t.Errorf("Service %s port %s: %d -> %s is not the container port of that name and number", svc.Name, p.Name, p.Port, p.TargetPort.String())
			}
		}
	}
	clientPorts := map[string]bool{}
	for _, p := range client.Spec.Ports {
		clientPorts[p.Name] = true
	}
	if !clientPorts["resp"] || !clientPorts["http"] || clientPorts["peer"] {
		t.Errorf("the client Service should offer resp and http, not the peer port: %v", sortedKeys(clientPorts))
	}

	probe := func(name string, p *corev1.Probe, path string) {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s probe: want an HTTP GET of %s", name, path)
			return
		}
		if p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe: GET %s on port %s, want %s on http (8379)", name, p.HTTPGet.Path, p.HTTPGet.Port.String(), path)
		}
	}
	probe("readiness", c.ReadinessProbe, "/readyz")
	probe("liveness", c.LivenessProbe, "/healthz")

	// At most one pod away by choice, and never two on one machine.
	if len(m.pdbs) != 1 {
		t.Fatalf("want one PodDisruptionBudget, have %d", len(m.pdbs))
	}
	pdb := m.pdbs[0]
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.String() != "1" || pdb.Spec.MinAvailable != nil {
		t.Errorf("PodDisruptionBudget: want maxUnavailable 1 (and no minAvailable)")
	}
	if pdb.Spec.Selector == nil || !selects(pdb.Spec.Selector.MatchLabels, podLabels) {
		t.Errorf("the PodDisruptionBudget does not select the StatefulSet's pods")
	}
	hard := false
	if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if term.TopologyKey == corev1.LabelHostname && term.LabelSelector != nil && selects(term.LabelSelector.MatchLabels, podLabels) {
				hard = true
			}
		}
	}
	if !hard {
		t.Errorf("no required pod anti-affinity on %s that selects lockd's pods", corev1.LabelHostname)
	}

	// The data volume: one claim per pod, mounted where start.sh keeps the data.
	mounts := map[string]string{}
	for _, vm := range c.VolumeMounts {
		mounts[vm.Name] = vm.MountPath
	}
	if len(sts.Spec.VolumeClaimTemplates) != 1 {
		t.Fatalf("want one volumeClaimTemplate, have %d", len(sts.Spec.VolumeClaimTemplates))
	}
	claim := sts.Spec.VolumeClaimTemplates[0]
	if mounts[claim.Name] != "/var/lib/lockd" {
		t.Errorf("the claim %q is mounted at %q, want /var/lib/lockd", claim.Name, mounts[claim.Name])
	}
	if _, ok := claim.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		t.Errorf("the claim %q requests no storage size", claim.Name)
	}

	// The start script: mounted from its ConfigMap and run by the container.
	script := startScript(t, m)
	if !slices.Equal(c.Command, []string{"/bin/bash", "/etc/lockd/start.sh"}) || mounts["start"] != "/etc/lockd" {
		t.Errorf("the container should run /etc/lockd/start.sh from the volume \"start\" (command %v, mounts %v)", c.Command, mounts)
	}
	if script == "" {
		t.Errorf("the ConfigMap lockd-start has no start.sh")
	}

	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("the container should run with a read-only root and no privilege escalation")
	}
	if ps := pod.Spec.SecurityContext; ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot {
		t.Errorf("the pod should run as a non-root user")
	}
	if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
		t.Errorf("the container has no memory limit (start.sh derives GOMEMLIMIT from it)")
	}

	// The Kubernetes scrape example names exactly these pods' HTTP ports.
	var prom struct {
		ScrapeConfigs []struct {
			StaticConfigs []struct {
				Targets []string `json:"targets"`
			} `json:"static_configs"`
		} `json:"scrape_configs"`
	}
	if err := yaml.Unmarshal(readFile(t, "prometheus/prometheus-kubernetes.yml"), &prom); err != nil {
		t.Fatal(err)
	}
	var targets, want []string
	for _, sc := range prom.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			targets = append(targets, st.Targets...)
		}
	}
	for i := range int(*sts.Spec.Replicas) {
		want = append(want, fmt.Sprintf("%s-%d.%s.lockd.svc:%d", sts.Name, i, headless.Name, ports["http"]))
	}
	if !slices.Equal(targets, want) {
		t.Errorf("prometheus-kubernetes.yml scrapes %v, want the pods' HTTP ports %v", targets, want)
	}
}

// startScript returns start.sh from the ConfigMap the StatefulSet mounts.
func startScript(t *testing.T, m manifests) string {
	t.Helper()
	for _, v := range m.sts.Spec.Template.Spec.Volumes {
		if v.Name == "start" && v.ConfigMap != nil {
			cm, ok := m.configMaps[v.ConfigMap.Name]
			if !ok {
				t.Fatalf("volume start: ConfigMap %q is not in %s", v.ConfigMap.Name, manifestPath)
			}
			return cm.Data["start.sh"]
		}
	}
	t.Fatalf("the StatefulSet mounts no ConfigMap volume \"start\"")
	return ""
}

// TestKubernetesStartScript runs start.sh as the container would (its
// command and args from the StatefulSet), with a stand-in lockd that records
// its arguments: pod 0 with an empty volume bootstraps only while no member
// answers on the client Service; every other start joins through it. Every
// flag it passes exists in lockd.
func TestKubernetesStartScript(t *testing.T) {
	bash := tool(t, "bash", "bash")
	m := loadManifests(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "start.sh")
	if err := os.WriteFile(script, []byte(startScript(t, m)), 0o755); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(dir, "lockd")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$ARGS_OUT\"\necho \"GOMEMLIMIT=$GOMEMLIMIT\" >> \"$ARGS_OUT\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A member that answers (a listening loopback port) and one that does not.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	up := ln.Addr().String()
	down := freeAddrs(t, 1)[0]
	containerArgs := m.sts.Spec.Template.Spec.Containers[0].Args
	const memLimit = 2 << 30
	flags := lockdFlags(t)

	for _, tc := range []struct {
		name      string
		pod       string
		hasData   bool
		members   string
		bootstrap bool
	}{
		{"first start of pod 0", "lockd-0", false, down, true},
		{"pod 0 lost its volume while the cluster runs", "lockd-0", false, up, false},
		{"pod 0 restarts", "lockd-0", true, down, false},
		{"pod 1 first start", "lockd-1", false, down, false},
		{"pod 2 restarts", "lockd-2", true, up, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			if tc.hasData {
				if err := os.MkdirAll(filepath.Join(data, "group-0"), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			out := filepath.Join(t.TempDir(), "args")
			env := append(os.Environ(), "POD_NAME="+tc.pod, "POD_IP=127.0.0.1", "LOCKD_BIN="+fake,
				"LOCKD_DATA_DIR="+data, "LOCKD_MEMBERS="+tc.members, "ARGS_OUT="+out,
				"MEMORY_LIMIT="+strconv.Itoa(memLimit), "GOMEMLIMIT=")
			if msg, err := run(t, dir, env, bash, append([]string{script}, containerArgs...)...); err != nil {
				t.Fatalf("start.sh: %v\n%s", err, msg)
			}
			lines := strings.Split(strings.TrimSpace(string(readFile(t, out))), "\n")
			args, gomem := lines[:len(lines)-1], lines[len(lines)-1]
			want := []string{"-node-id", tc.pod, "-data-dir", data, "-addr", "0.0.0.0:6379",
				"-peer-addr", "127.0.0.1:7379", "-advertise-addr", tc.pod + ".lockd-peer:7379", "-http-addr", "0.0.0.0:8379"}
			if !tc.bootstrap {
				want = append(want, "-join", tc.members)
			}
			want = append(want, containerArgs...)
			if !slices.Equal(args, want) {
				t.Errorf("lockd %v\nwant  %v", args, want)
			}
			if w := fmt.Sprintf("GOMEMLIMIT=%d", memLimit/10*9); gomem != w {
				t.Errorf("%s, want %s (90%% of the memory limit)", gomem, w)
			}
			checkFlags(t, "start.sh", args, flags)
		})
	}
}
