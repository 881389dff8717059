// Package kubernetes_test checks the Kubernetes manifests beside it: each
// decodes strictly into the Kubernetes API types (an unknown or misplaced
// field fails), they refer to each other consistently, and the config they
// mount is one Herald accepts.
package kubernetes_test

import (
	"os"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/drivers"
)

// decode reads a manifest strictly into v.
func decode(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// manifests are the four objects, decoded.
type manifests struct {
	dep    appsv1.Deployment
	svc    corev1.Service
	cm     corev1.ConfigMap
	secret corev1.Secret
}

func load(t *testing.T) manifests {
	var m manifests
	decode(t, "deployment.yaml", &m.dep)
	decode(t, "service.yaml", &m.svc)
	decode(t, "configmap.yaml", &m.cm)
	decode(t, "secret.yaml", &m.secret)
	for file, kind := range map[string]string{m.dep.Kind: "Deployment", m.svc.Kind: "Service", m.cm.Kind: "ConfigMap",
		m.secret.Kind: "Secret"} {
		if file != kind {
			t.Errorf("kind %q, want %q", file, kind)
		}
	}
	return m
}

// TestManifestsProbeHeraldsHealthEndpoints: liveness on /healthz,
// readiness on /readyz, both on the admin port the Service targets.
func TestManifestsProbeHeraldsHealthEndpoints(t *testing.T) {
	m := load(t)
	if len(m.dep.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("want one container")
	}
	c := m.dep.Spec.Template.Spec.Containers[0]
	live, ready := c.LivenessProbe, c.ReadinessProbe
	if live == nil || live.HTTPGet == nil || live.HTTPGet.Path != "/healthz" {
		t.Errorf("liveness probe %+v, want GET /healthz", live)
	}
	if ready == nil || ready.HTTPGet == nil || ready.HTTPGet.Path != "/readyz" {
		t.Errorf("readiness probe %+v, want GET /readyz", ready)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for _, probe := range []*corev1.Probe{live, ready} {
		if probe != nil && probe.HTTPGet != nil {
			if _, ok := ports[probe.HTTPGet.Port.StrVal]; !ok {
				t.Errorf("a probe asks port %v, which the container does not name (%v)", probe.HTTPGet.Port, ports)
			}
		}
	}
	for _, sp := range m.svc.Spec.Ports {
		if _, ok := ports[sp.TargetPort.StrVal]; !ok {
			t.Errorf("the Service targets port %v, which the container does not name", sp.TargetPort)
		}
	}
	if addr := envValue(c, "HERALD_ADMIN_ADDR"); addr != "0.0.0.0:8080" || ports["admin"] != 8080 {
		t.Errorf("HERALD_ADMIN_ADDR %q with admin port %d: the admin server must listen beyond loopback on the port probed",
			addr, ports["admin"])
	}
	for k, v := range m.svc.Spec.Selector {
		if m.dep.Spec.Template.Labels[k] != v || m.dep.Spec.Selector.MatchLabels[k] != v {
			t.Errorf("the Service selects %s=%s, which the Deployment's pods do not carry", k, v)
		}
	}
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// TestManifestsSecretAndConfigAgree: every secret key the pod reads is in
// the Secret, the ConfigMap mounted holds herald.yaml at the path the args
// name, and that config, with the Secret's DSN, is one Herald accepts.
func TestManifestsSecretAndConfigAgree(t *testing.T) {
	m := load(t)
	c := m.dep.Spec.Template.Spec.Containers[0]
	for _, e := range c.Env {
		if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil {
			if ref.SecretKeyRef.Name != m.secret.Name {
				t.Errorf("%s reads Secret %q, want %q", e.Name, ref.SecretKeyRef.Name, m.secret.Name)
			}
			if _, ok := m.secret.StringData[ref.SecretKeyRef.Key]; !ok {
				t.Errorf("%s reads key %q, which the Secret does not hold", e.Name, ref.SecretKeyRef.Key)
			}
		}
	}
	vols := m.dep.Spec.Template.Spec.Volumes
	if len(vols) != 1 || vols[0].ConfigMap == nil || vols[0].ConfigMap.Name != m.cm.Name {
		t.Fatalf("volumes %+v, want the ConfigMap %s", vols, m.cm.Name)
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/etc/herald" ||
		!slices.Contains(c.Args, "/etc/herald/herald.yaml") {
		t.Errorf("mounts %+v and args %v: the config must be read from /etc/herald/herald.yaml", c.VolumeMounts, c.Args)
	}
	t.Setenv("HERALD_STORE_DSN", m.secret.StringData["store-dsn"])
	if _, err := config.Parse([]byte(m.cm.Data["herald.yaml"]), "configmap.yaml", config.Drivers{Brokers: drivers.Brokers(), Stores: drivers.Stores()}); err != nil {
		t.Errorf("the ConfigMap's herald.yaml: %v", err)
	}
}
