package k8s

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// manifests are every object of the kustomization, decoded strictly.
type manifests struct {
	deployments  []*appsv1.Deployment
	statefulSets []*appsv1.StatefulSet
	jobs         []*batchv1.Job
	services     []*corev1.Service
	hpas         []*autoscalingv2.HorizontalPodAutoscaler
	pdbs         []*policyv1.PodDisruptionBudget
	policies     []*networkingv1.NetworkPolicy
	// secrets are the kustomization's secretGenerator entries.
	secrets []secretGenerator
	// images are the kustomization's images: entries (images_test.go).
	images []imageEntry
	// files is the manifest each object came from, by "Kind name".
	files map[string]string
	// namespace is the kustomization's namespace:; namespaces its Namespace
	// objects; objects every object, by "Kind name", with its metadata.
	namespace  string
	namespaces []*corev1.Namespace
	objects    map[string]metav1.Object
}

// fileOf is the manifest an object of this kind and name came from.
func (m manifests) fileOf(kind, name string) string { return m.files[kind+" "+name] }

// secretGenerator is one entry of kustomization.yaml's secretGenerator.
type secretGenerator struct {
	Name  string   `json:"name"`
	Files []string `json:"files"`
}

// load reads kustomization.yaml, checks it lists every manifest here and
// nothing else, and decodes each document into its k8s.io/api type with
// unknown and duplicate fields as errors.
func load(t *testing.T) manifests {
	t.Helper()
	return loadDir(t, ".")
}

// loadDir is load on the kustomization in dir.
func loadDir(t *testing.T, dir string) manifests {
	t.Helper()
	var k struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Labels     []struct {
			Pairs map[string]string `json:"pairs"`
		} `json:"labels"`
		Resources       []string          `json:"resources"`
		SecretGenerator []secretGenerator `json:"secretGenerator"`
		Images          []imageEntry      `json:"images"`
		Namespace       string            `json:"namespace"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Fatalf("kustomization.yaml: %s %s", k.APIVersion, k.Kind)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for i := range files {
		files[i] = filepath.Base(files[i])
	}
	files = slices.DeleteFunc(files, func(f string) bool { return f == "kustomization.yaml" })
	if got := slices.Sorted(slices.Values(k.Resources)); !slices.Equal(got, files) {
		t.Fatalf("kustomization resources %v, files %v", got, files)
	}
	m := manifests{secrets: k.SecretGenerator, images: k.Images, files: map[string]string{},
		namespace: k.Namespace, objects: map[string]metav1.Object{}}
	for _, f := range k.Resources {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Fatalf("%s #%d: %v", f, i, err)
			}
			var obj any
			switch tm.APIVersion + " " + tm.Kind {
			case "apps/v1 Deployment":
				o := &appsv1.Deployment{}
				m.deployments, obj = append(m.deployments, o), o
			case "apps/v1 StatefulSet":
				o := &appsv1.StatefulSet{}
				m.statefulSets, obj = append(m.statefulSets, o), o
			case "batch/v1 Job":
				o := &batchv1.Job{}
				m.jobs, obj = append(m.jobs, o), o
			case "v1 Service":
				o := &corev1.Service{}
				m.services, obj = append(m.services, o), o
			case "autoscaling/v2 HorizontalPodAutoscaler":
				o := &autoscalingv2.HorizontalPodAutoscaler{}
				m.hpas, obj = append(m.hpas, o), o
			case "policy/v1 PodDisruptionBudget":
				o := &policyv1.PodDisruptionBudget{}
				m.pdbs, obj = append(m.pdbs, o), o
			case "v1 Namespace":
				o := &corev1.Namespace{}
				m.namespaces, obj = append(m.namespaces, o), o
			case "networking.k8s.io/v1 NetworkPolicy":
				o := &networkingv1.NetworkPolicy{}
				m.policies, obj = append(m.policies, o), o
			default:
				t.Fatalf("%s #%d: unexpected %s %s", f, i, tm.APIVersion, tm.Kind)
			}
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Fatalf("%s #%d (%s): %v", f, i, tm.Kind, err)
			}
			m.files[tm.Kind+" "+obj.(named).GetName()] = f
			m.objects[tm.Kind+" "+obj.(named).GetName()] = obj.(metav1.Object)
		}
	}
	return m
}

// TestStrictDecodingCatchesTypos is the control: a misspelt field fails.
func TestStrictDecodingCatchesTypos(t *testing.T) {
	b, err := os.ReadFile("snowflaked-deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(b), "readinessProbe:", "readynessProbe:", 1)
	if err := yaml.UnmarshalStrict([]byte(bad), &appsv1.Deployment{}); err == nil || !strings.Contains(err.Error(), "readynessProbe") {
		t.Fatalf("a misspelt field decoded: %v", err)
	}
}

// daemonFlags builds snowflaked from the root module and reads its flags
// and their defaults from --help.
func daemonFlags(t *testing.T) (bin string, flags map[string]string) {
	t.Helper()
	bin = filepath.Join(t.TempDir(), "snowflaked")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/snowflaked")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--help").Output()
	if err != nil {
		t.Fatalf("snowflaked --help: %v", err)
	}
	flags = map[string]string{}
	re := regexp.MustCompile(`^  -([a-z-]+)`)
	def := regexp.MustCompile(`\(default "?([^")]*)"?\)`)
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		f := re.FindStringSubmatch(l)
		if f == nil {
			continue
		}
		flags[f[1]] = ""
		for _, desc := range lines[i+1:] {
			if re.MatchString(desc) {
				break
			}
			if d := def.FindStringSubmatch(desc); d != nil {
				flags[f[1]] = d[1]
			}
		}
	}
	for _, want := range []string{"zk", "listen", "http", "advertise", "shutdown-delay", "drain-timeout", "release-timeout"} {
		if _, ok := flags[want]; !ok {
			t.Fatalf("--help lacks --%s; parsed %v", want, flags)
		}
	}
	return bin, flags
}

func port(t *testing.T, addr string) int32 {
	_, p, err := net.SplitHostPort(addr)
	n, err2 := strconv.Atoi(p)
	if err != nil || err2 != nil {
		t.Fatalf("address %q: %v %v", addr, err, err2)
	}
	return int32(n)
}

// TestSnowflakedDeployment: every SNOWFLAKE_* variable and argument names a
// real flag, the advertised address comes from the downward API, probes
// and ports are the binary's (liveness and startup on /healthz, which
// answers while a worker waits for the init Job to make the root, so no
// restart), the grace period covers the shutdown, and the init Job runs
// the same image on the same ensemble and root.
func TestSnowflakedDeployment(t *testing.T) {
	m := load(t)
	bin, flags := daemonFlags(t)
	if len(m.deployments) != 1 {
		t.Fatalf("%d Deployments, want 1 (snowflaked)", len(m.deployments))
	}
	d := m.deployments[0]
	spec := d.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers", len(spec.Containers))
	}
	c := spec.Containers[0]

	// The root is made by snowflakectl init, never by a worker: a Job of
	// the same image on the same ensemble and root, which Kubernetes
	// retries until ZooKeeper answers.
	if len(spec.InitContainers) != 0 {
		t.Errorf("the worker pods have %d init containers (the first %q): init is the Job snowflakectl-init", len(spec.InitContainers), spec.InitContainers[0].Name)
	}
	job := find(t, m.jobs, "snowflakectl-init")
	js := job.Spec.Template.Spec
	if len(js.Containers) != 1 || js.Containers[0].Image != c.Image || len(js.Containers[0].Command) < 2 ||
		!slices.Equal(js.Containers[0].Command[:2], []string{"/snowflakectl", "init"}) {
		t.Fatalf("job snowflakectl-init containers %+v: want one running /snowflakectl init from %s", js.Containers, c.Image)
	}
	if js.RestartPolicy != corev1.RestartPolicyOnFailure && js.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("job snowflakectl-init restartPolicy %q: a Job needs OnFailure or Never", js.RestartPolicy)
	}
	if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit < 1 {
		t.Errorf("job snowflakectl-init backoffLimit %v: init must be retried while ZooKeeper has no quorum", job.Spec.BackoffLimit)
	}
	initEnv := map[string]string{}
	for _, e := range js.Containers[0].Env {
		initEnv[e.Name] = e.Value
	}
	for _, e := range c.Env {
		if (e.Name == "SNOWFLAKE_ZK" || e.Name == "SNOWFLAKE_ZK_ROOT") && initEnv[e.Name] != e.Value {
			t.Errorf("init job's %s %q, the worker's %q", e.Name, initEnv[e.Name], e.Value)
		}
	}

	// Settings: environment and arguments, as the binary reads them.
	settings := map[string]string{}
	envIndex := map[string]int{}
	for i, e := range c.Env {
		envIndex[e.Name] = i
		name, ok := strings.CutPrefix(e.Name, "SNOWFLAKE_")
		if !ok {
			continue
		}
		flag := strings.ReplaceAll(strings.ToLower(name), "_", "-")
		if _, ok := flags[flag]; !ok || flag == "version" {
			t.Errorf("env %s names no snowflaked flag (--%s)", e.Name, flag)
		}
		settings[flag] = e.Value
	}
	for _, a := range append(slices.Clone(c.Command), c.Args...) {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, val, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if _, ok := flags[name]; !ok {
			t.Errorf("argument %q names no snowflaked flag", a)
		}
		settings[name] = val
	}
	get := func(flag string) string {
		if v, ok := settings[flag]; ok {
			return v
		}
		return flags[flag]
	}
	dur := func(flag string) time.Duration {
		d, err := time.ParseDuration(get(flag))
		if err != nil {
			t.Fatalf("--%s %q: %v", flag, get(flag), err)
		}
		return d
	}

	// The advertised address: the pod IP from the downward API, defined
	// before it is referred to, and the port the ID service listens on.
	ip, ok := envIndex["POD_IP"]
	if !ok || c.Env[ip].ValueFrom == nil || c.Env[ip].ValueFrom.FieldRef == nil || c.Env[ip].ValueFrom.FieldRef.FieldPath != "status.podIP" {
		t.Fatalf("POD_IP does not come from the downward API status.podIP")
	}
	listen := port(t, get("listen"))
	if want := fmt.Sprintf("$(POD_IP):%d", listen); settings["advertise"] != want || envIndex["SNOWFLAKE_ADVERTISE"] < ip {
		t.Errorf("SNOWFLAKE_ADVERTISE %q (index %d, POD_IP %d), want %q after POD_IP", settings["advertise"], envIndex["SNOWFLAKE_ADVERTISE"], ip, want)
	}

	// Ports and probes against the binary's.
	admin := port(t, get("http"))
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["resp"] != listen || ports["admin"] != admin {
		t.Errorf("container ports %v, want resp %d (--listen) and admin %d (--http)", ports, listen, admin)
	}
	probePort := func(p intstr.IntOrString) int32 {
		if p.Type == intstr.String {
			return ports[p.StrVal]
		}
		return p.IntVal
	}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"readiness", c.ReadinessProbe, "/readyz"}, {"liveness", c.LivenessProbe, "/healthz"}, {"startup", c.StartupProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s probe: not an HTTP GET", p.name)
			continue
		}
		if p.probe.HTTPGet.Path != p.path || probePort(p.probe.HTTPGet.Port) != admin {
			t.Errorf("%s probe GET %s on port %v, want %s on %d", p.name, p.probe.HTTPGet.Path, p.probe.HTTPGet.Port.String(), p.path, admin)
		}
	}
	// The paths are served by the binary: run it without a ZooKeeper.
	checkPaths(t, bin, map[string]int{"/healthz": 200, "/readyz": 503})

	// Shutdown: the grace period covers delay + drain + release, plus the
	// daemon's 1s bound on the drain.
	need := dur("shutdown-delay") + dur("drain-timeout") + dur("release-timeout") + time.Second
	if dur("shutdown-delay") <= 0 {
		t.Errorf("--shutdown-delay is %v: endpoints would still route to a pod that stopped accepting", dur("shutdown-delay"))
	}
	if g := spec.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second < need {
		t.Errorf("terminationGracePeriodSeconds %v < shutdown delay + drain + release + 1s = %v", g, need)
	}

	// Rollouts keep capacity; the selector matches the pods.
	ru := d.Spec.Strategy.RollingUpdate
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 {
		t.Errorf("strategy %+v: want a rolling update with maxUnavailable 0", d.Spec.Strategy)
	}
	if !matches(d.Spec.Selector, d.Spec.Template.Labels) {
		t.Errorf("selector %v does not match the pod labels %v", d.Spec.Selector, d.Spec.Template.Labels)
	}

	// The Service, the HPA and the PDB point at it.
	svc := find(t, m.services, "snowflaked")
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || !matchesMap(svc.Spec.Selector, d.Spec.Template.Labels) {
		t.Errorf("service snowflaked: type %s selector %v", svc.Spec.Type, svc.Spec.Selector)
	}
	for _, p := range svc.Spec.Ports {
		if probePort(p.TargetPort) == 0 {
			t.Errorf("service port %s targets %v, no container port", p.Name, p.TargetPort.String())
		}
	}
	if len(m.hpas) != 1 {
		t.Fatalf("%d HPAs", len(m.hpas))
	}
	h := m.hpas[0]
	if h.Spec.ScaleTargetRef.Kind != "Deployment" || h.Spec.ScaleTargetRef.Name != d.Name || h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 {
		t.Errorf("HPA target %+v min %v", h.Spec.ScaleTargetRef, h.Spec.MinReplicas)
	}
	if len(h.Spec.Metrics) == 0 || h.Spec.Metrics[0].Resource == nil || h.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU {
		t.Errorf("HPA metrics %+v: want CPU", h.Spec.Metrics)
	}
	if b := h.Spec.Behavior; b == nil || b.ScaleDown == nil || b.ScaleDown.StabilizationWindowSeconds == nil || *b.ScaleDown.StabilizationWindowSeconds < 300 {
		t.Errorf("HPA scale-down not slowed (stabilization >= 300s)")
	}
	if h.Spec.MaxReplicas > 1024 {
		t.Errorf("HPA maxReplicas %d > 1024 slots", h.Spec.MaxReplicas)
	}
	pdb := find(t, m.pdbs, "snowflaked")
	if !matches(pdb.Spec.Selector, d.Spec.Template.Labels) {
		t.Errorf("PDB snowflaked selector %v", pdb.Spec.Selector)
	}

	// SNOWFLAKE_ZK names the reference ensemble's pods.
	zk := find(t, m.statefulSets, "zookeeper")
	var want []string
	for i := 0; i < int(*zk.Spec.Replicas); i++ {
		want = append(want, fmt.Sprintf("%s-%d.%s:2181", zk.Name, i, zk.Spec.ServiceName))
	}
	if got := get("zk"); got != strings.Join(want, ",") {
		t.Errorf("SNOWFLAKE_ZK %q, want the ensemble's pods %q", got, strings.Join(want, ","))
	}
}

// TestZooKeeper: a 3-node StatefulSet behind a headless Service, a PDB
// that keeps the quorum, and ZOO_SERVERS naming its own pods.
func TestZooKeeper(t *testing.T) {
	m := load(t)
	zk := find(t, m.statefulSets, "zookeeper")
	if zk.Spec.Replicas == nil || *zk.Spec.Replicas != 3 {
		t.Fatalf("zookeeper replicas %v, want 3", zk.Spec.Replicas)
	}
	hs := find(t, m.services, zk.Spec.ServiceName)
	if hs.Spec.ClusterIP != corev1.ClusterIPNone || !matchesMap(hs.Spec.Selector, zk.Spec.Template.Labels) {
		t.Errorf("service %s: clusterIP %q selector %v; want headless over the ensemble", hs.Name, hs.Spec.ClusterIP, hs.Spec.Selector)
	}
	pdb := find(t, m.pdbs, "zookeeper")
	if !matches(pdb.Spec.Selector, zk.Spec.Template.Labels) || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("zookeeper PDB %+v: want maxUnavailable 1 over the ensemble", pdb.Spec)
	}
	var servers string
	for _, e := range zk.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "ZOO_SERVERS" {
			servers = e.Value
		}
	}
	for i := 0; i < 3; i++ {
		want := fmt.Sprintf("server.%d=%s-%d.%s:2888:3888;2181", i+1, zk.Name, i, zk.Spec.ServiceName)
		if !strings.Contains(servers, want) {
			t.Errorf("ZOO_SERVERS %q lacks %q", servers, want)
		}
	}
}

// TestHardening: every container of every workload runs as non-root on a
// read-only root filesystem with all capabilities dropped, and has
// requests and limits.
func TestHardening(t *testing.T) {
	m := load(t)
	var pods []struct {
		name string
		spec corev1.PodSpec
	}
	for _, d := range m.deployments {
		pods = append(pods, struct {
			name string
			spec corev1.PodSpec
		}{d.Name, d.Spec.Template.Spec})
	}
	for _, s := range m.statefulSets {
		pods = append(pods, struct {
			name string
			spec corev1.PodSpec
		}{s.Name, s.Spec.Template.Spec})
	}
	for _, j := range m.jobs {
		pods = append(pods, struct {
			name string
			spec corev1.PodSpec
		}{j.Name, j.Spec.Template.Spec})
	}
	for _, p := range pods {
		psc := p.spec.SecurityContext
		for _, c := range append(slices.Clone(p.spec.InitContainers), p.spec.Containers...) {
			sc := c.SecurityContext
			nonRoot := sc != nil && sc.RunAsNonRoot != nil && *sc.RunAsNonRoot ||
				psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot
			if !nonRoot || sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
				sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
				sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
				t.Errorf("%s/%s: not hardened (non-root %v, security context %+v)", p.name, c.Name, nonRoot, sc)
			}
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
				if req.IsZero() || lim.IsZero() || req.Cmp(lim) > 0 {
					t.Errorf("%s/%s: %s request %v limit %v", p.name, c.Name, r, req.String(), lim.String())
				}
			}
		}
	}
}

// checkPaths runs bin with no ZooKeeper and checks each admin path answers
// the wanted status (so a probe path is one the binary serves).
func checkPaths(t *testing.T, bin string, want map[string]int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	httpAddr := ln.Addr().String()
	ln.Close()
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := dead.Addr().String()
	dead.Close()
	cmd := exec.Command(bin, "--zk", deadAddr, "--zk-insecure", "--listen", "127.0.0.1:0", "--http", httpAddr)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	hc := http.Client{Timeout: time.Second}
	for path, code := range want {
		var got int
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			resp, err := hc.Get("http://" + httpAddr + path)
			if err == nil {
				got = resp.StatusCode
				resp.Body.Close()
				break
			}
		}
		if got != code {
			t.Errorf("snowflaked %s = %d, want %d\n%s", path, got, code, out.String())
		}
	}
}

type named interface{ GetName() string }

func find[T named](t *testing.T, objs []T, name string) T {
	t.Helper()
	for _, o := range objs {
		if o.GetName() == name {
			return o
		}
	}
	var zero T
	t.Fatalf("no %T named %q", zero, name)
	return zero
}

func matches(sel *metav1.LabelSelector, labels map[string]string) bool {
	return sel != nil && len(sel.MatchExpressions) == 0 && matchesMap(sel.MatchLabels, labels)
}

func matchesMap(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}
