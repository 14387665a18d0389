package main

// Checks of the deployment files against the code: the Kubernetes manifest
// probes the right endpoints and keeps its security context, the systemd
// unit in docs/deploy.md is the one in deploy/, and every CAPSULE_ variable
// they name is one serve reads.

import (
	"bytes"
	"capsule/supervisor/mcp/transport"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

const (
	manifestPath = "../../deploy/kubernetes.yaml"
	unitPath     = "../../deploy/systemd/capsule@.service"
	deployDoc    = "../../docs/deploy.md"
)

// k8sObject is the part of a Kubernetes object the checks read; unknown
// fields are ignored.
type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		// Deployment
		Replicas *int `yaml:"replicas"`
		Template struct {
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
		// Service
		Ports []struct {
			Port       int    `yaml:"port"`
			TargetPort string `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type podSpec struct {
	AutomountServiceAccountToken  *bool `yaml:"automountServiceAccountToken"`
	TerminationGracePeriodSeconds int   `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               struct {
		RunAsNonRoot *bool `yaml:"runAsNonRoot"`
		RunAsUser    *int  `yaml:"runAsUser"`
	} `yaml:"securityContext"`
	Containers []container `yaml:"containers"`
	Volumes    []struct {
		Name     string    `yaml:"name"`
		EmptyDir *struct{} `yaml:"emptyDir"`
	} `yaml:"volumes"`
}

type container struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env []struct {
		Name      string  `yaml:"name"`
		Value     *string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	Lifecycle      struct {
		PreStop struct {
			Sleep struct {
				Seconds int `yaml:"seconds"`
			} `yaml:"sleep"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext *struct {
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		Privileged               *bool `yaml:"privileged"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
		RunAsUser                *int  `yaml:"runAsUser"`
		Capabilities             struct {
			Add  []string `yaml:"add"`
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
		SeccompProfile struct {
			Type string `yaml:"type"`
		} `yaml:"seccompProfile"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"` // a name or a number
	} `yaml:"httpGet"`
}

// env returns the literal value of variable name, and whether it is set
// literally.
func (c container) env(name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name && e.Value != nil {
			return *e.Value, true
		}
	}
	return "", false
}

func loadManifest(t *testing.T) (deployment, service k8sObject) {
	t.Helper()
	b, err := os.ReadFile(manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var found []string
	for {
		var o k8sObject
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", manifestPath, err)
		}
		found = append(found, o.Kind)
		switch o.Kind {
		case "Deployment":
			deployment = o
		case "Service":
			service = o
		}
	}
	slices.Sort(found)
	if !slices.Equal(found, []string{"Deployment", "Service"}) {
		t.Fatalf("%s holds %v, want one Deployment and one Service", manifestPath, found)
	}
	return deployment, service
}

func TestKubernetesManifest(t *testing.T) {
	dep, svc := loadManifest(t)
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if len(c.Ports) != 1 {
		t.Fatalf("%d container ports, want 1", len(c.Ports))
	}
	port := c.Ports[0]
	if want := []string{"serve", "--http", "0.0.0.0:8080"}; !slices.Equal(c.Args, want) || port.ContainerPort != 8080 {
		t.Errorf("args %v on port %d, want %v on 8080", c.Args, port.ContainerPort, want)
	}

	t.Run("probes", func(t *testing.T) {
		for _, p := range []struct {
			name  string
			probe *probe
			path  string
		}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
			if p.probe == nil || p.probe.HTTPGet == nil {
				t.Errorf("%s probe: want an httpGet probe", p.name)
				continue
			}
			g := p.probe.HTTPGet
			if g.Path != p.path {
				t.Errorf("%s probe path %q, want %q", p.name, g.Path, p.path)
			}
			if g.Port != port.Name && g.Port != port.ContainerPort {
				t.Errorf("%s probe port %v, want the container port (%s, %d)", p.name, g.Port, port.Name, port.ContainerPort)
			}
		}
	})

	t.Run("security context", func(t *testing.T) {
		sc := c.SecurityContext
		if sc == nil {
			t.Fatal("the container has no securityContext")
		}
		checks := []struct {
			what string
			ok   bool
		}{
			{"runAsNonRoot: true", sc.RunAsNonRoot != nil && *sc.RunAsNonRoot},
			{"runAsUser: 65532", sc.RunAsUser != nil && *sc.RunAsUser == 65532},
			{"readOnlyRootFilesystem: true", sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem},
			{"allowPrivilegeEscalation: false", sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation},
			{"not privileged", sc.Privileged == nil || !*sc.Privileged},
			{"capabilities drop ALL", slices.Contains(sc.Capabilities.Drop, "ALL")},
			{"no capabilities added", len(sc.Capabilities.Add) == 0},
			{"seccompProfile Unconfined, RuntimeDefault or Localhost",
				slices.Contains([]string{"Unconfined", "RuntimeDefault", "Localhost"}, sc.SeccompProfile.Type)},
			{"pod runAsNonRoot: true", pod.SecurityContext.RunAsNonRoot != nil && *pod.SecurityContext.RunAsNonRoot},
			{"no service-account token", pod.AutomountServiceAccountToken != nil && !*pod.AutomountServiceAccountToken},
		}
		for _, ch := range checks {
			if !ch.ok {
				t.Errorf("want %s", ch.what)
			}
		}
	})

	t.Run("token from a Secret", func(t *testing.T) {
		for _, e := range c.Env {
			if e.Name == transport.AuthTokenEnv {
				if e.Value != nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
					t.Fatalf("%s must come from a secretKeyRef, never a literal", transport.AuthTokenEnv)
				}
				return
			}
		}
		t.Fatalf("%s is not set: capsule refuses to bind 0.0.0.0 without it", transport.AuthTokenEnv)
	})

	t.Run("cache on an emptyDir", func(t *testing.T) {
		cache, ok := c.env("XDG_CACHE_HOME")
		if !ok {
			t.Fatal("XDG_CACHE_HOME is not set: the root file system is read-only")
		}
		for _, m := range c.VolumeMounts {
			if m.MountPath != cache && !strings.HasPrefix(cache, m.MountPath+"/") {
				continue
			}
			for _, v := range pod.Volumes {
				if v.Name == m.Name && v.EmptyDir != nil {
					return
				}
			}
		}
		t.Fatalf("XDG_CACHE_HOME=%s is not an emptyDir mount", cache)
	})

	t.Run("resources", func(t *testing.T) {
		for _, r := range []string{"cpu", "memory"} {
			if c.Resources.Requests[r] == "" || c.Resources.Limits[r] == "" {
				t.Errorf("want a request and a limit for %s", r)
			}
		}
		if v, ok := c.env("CAPSULE_MAX_CONCURRENCY"); !ok || v != c.Resources.Limits["cpu"] {
			t.Errorf("CAPSULE_MAX_CONCURRENCY = %q, want the CPU limit %q (NumCPU sees the node's CPUs)",
				v, c.Resources.Limits["cpu"])
		}
	})

	t.Run("shutdown fits the termination grace", func(t *testing.T) {
		v, _ := c.env("CAPSULE_SHUTDOWN_GRACE")
		grace, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("CAPSULE_SHUTDOWN_GRACE = %q: %v", v, err)
		}
		need := grace + time.Duration(c.Lifecycle.PreStop.Sleep.Seconds)*time.Second
		if have := time.Duration(pod.TerminationGracePeriodSeconds) * time.Second; have <= need {
			t.Errorf("terminationGracePeriodSeconds %v, want more than preStop plus the grace, %v", have, need)
		}
	})

	t.Run("service", func(t *testing.T) {
		if len(svc.Spec.Ports) != 1 || (svc.Spec.Ports[0].TargetPort != port.Name &&
			svc.Spec.Ports[0].TargetPort != "8080") {
			t.Errorf("service ports %+v, want one targeting the container port", svc.Spec.Ports)
		}
	})
}

func TestDeployDocEmbedsTheUnit(t *testing.T) {
	unit, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(deployDoc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, []byte("```ini\n"+string(unit)+"```\n")) {
		t.Errorf("%s does not show %s verbatim: copy the unit into its ini block", deployDoc, unitPath)
	}
}

// TestDeployVariablesExist keeps the deployment files from naming a
// variable that serve does not read (a typo would be silently ignored).
func TestDeployVariablesExist(t *testing.T) {
	help, err := exec.Command(capsuleBin, "serve", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("serve --help: %v\n%s", err, help)
	}
	known := map[string]bool{transport.AuthTokenEnv: true}
	for _, m := range regexp.MustCompile(`\(env (CAPSULE_[A-Z_]+)\)`).FindAllStringSubmatch(string(help), -1) {
		known[m[1]] = true
	}
	for _, path := range []string{manifestPath, unitPath, deployDoc} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range regexp.MustCompile(`CAPSULE_[A-Z_]+[A-Z]`).FindAllString(string(b), -1) {
			if !known[v] {
				t.Errorf("%s names %s, which capsule serve does not read", path, v)
			}
		}
	}
}
