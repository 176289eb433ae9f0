package k8s

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The credentials Secrets and their keys (kustomization.yaml's
// secretGenerator, secrets.sh): the workers' Secret, and the operator's,
// which only the init Job refers to (so rotating the operator identity
// touches the Job alone, and RBAC can keep the workers' namespace readers
// off it).
const (
	secretName         = "snowflake-credentials"
	operatorSecretName = "snowflake-operator"
	keyZKOperator      = "zk-operator"
	keyZKWorker        = "zk-worker"
	keyRequirepass     = "requirepass"
)

// secretKeys is which Secret holds each key.
var secretKeys = map[string][]string{
	secretName:         {keyRequirepass, keyZKWorker},
	operatorSecretName: {keyZKOperator},
}

// secretOf is the Secret a key belongs in.
func secretOf(key string) string {
	for s, keys := range secretKeys {
		if slices.Contains(keys, key) {
			return s
		}
	}
	return ""
}

// The labels networkpolicies.yaml admits by.
var (
	zkClientLabels    = map[string]string{"snowflake.io/zk-client": "true"}
	idClientLabels    = map[string]string{"snowflake.io/id-client": "true"}
	adminClientLabels = map[string]string{"snowflake.io/admin-client": "true"}
)

// TestSecureAsShipped: the manifests are secure as they come (issue 24
// items 3 and 9): the credentials are files of generated Secrets, each
// container mounting only the keys it needs; the operator identity is
// mounted by the init Job alone (snowflakectl init as the operator, naming
// the worker identity, labelled a ZooKeeper client), never by a worker pod;
// ZooKeeper's ports and the workers' are reachable only from the pods meant
// to reach them.
func TestSecureAsShipped(t *testing.T) {
	for _, p := range securityProblems(load(t)) {
		t.Error(p)
	}
}

// TestSecurityChecksCatchGaps is the control: each gap, made in a copy of
// the manifests, is reported.
func TestSecurityChecksCatchGaps(t *testing.T) {
	worker := func(m manifests) *corev1.Container { return &m.deployments[0].Spec.Template.Spec.Containers[0] }
	workers := func(m manifests) *corev1.PodSpec { return &m.deployments[0].Spec.Template.Spec }
	job := func(m manifests) *corev1.PodSpec { return &m.jobs[0].Spec.Template.Spec }
	initc := func(m manifests) *corev1.Container { return &job(m).Containers[0] }
	// giveOperatorKey adds the Job's zk-operator volume to spec and mounts
	// it in c.
	giveOperatorKey := func(m manifests, spec *corev1.PodSpec, c *corev1.Container) {
		for _, v := range job(m).Volumes {
			if v.Name == "zk-operator" {
				spec.Volumes = append(spec.Volumes, v)
			}
		}
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "zk-operator", MountPath: "/op", ReadOnly: true})
	}
	dropEnv := func(c *corev1.Container, name string) {
		c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
	}
	for _, g := range []struct {
		name    string
		breakIt func(m *manifests)
	}{
		{"no secretGenerator", func(m *manifests) { m.secrets = nil }},
		{"init without its mounts", func(m *manifests) { initc(*m).VolumeMounts = nil }},
		{"init as the world (--zk-insecure)", func(m *manifests) { initc(*m).Command = append(initc(*m).Command, "--zk-insecure") }},
		{"worker without credentials", func(m *manifests) { dropEnv(worker(*m), "SNOWFLAKE_ZK_AUTH_FILE") }},
		{"worker without requirepass", func(m *manifests) { dropEnv(worker(*m), "SNOWFLAKE_REQUIREPASS_FILE") }},
		{"worker given the operator identity", func(m *manifests) { giveOperatorKey(*m, workers(*m), worker(*m)) }},
		{"init back as an init container of the workers", func(m *manifests) {
			workers(*m).Volumes = append(workers(*m).Volumes, job(*m).Volumes...)
			workers(*m).InitContainers = append(workers(*m).InitContainers, *initc(*m))
		}},
		{"a worker init container given the operator identity", func(m *manifests) {
			workers(*m).InitContainers = append(workers(*m).InitContainers, corev1.Container{Name: "wait"})
			giveOperatorKey(*m, workers(*m), &workers(*m).InitContainers[0])
		}},
		{"ZooKeeper given the operator identity", func(m *manifests) {
			zk := &m.statefulSets[0].Spec.Template.Spec
			giveOperatorKey(*m, zk, &zk.Containers[0])
		}},
		{"no init Job", func(m *manifests) { m.jobs = nil }},
		{"the operator key in the workers' Secret", func(m *manifests) {
			for i := range m.secrets {
				if m.secrets[i].Name == operatorSecretName {
					m.secrets[(i+1)%2].Files = append(m.secrets[(i+1)%2].Files, m.secrets[i].Files...)
					m.secrets[i].Files = nil
				}
			}
		}},
		{"workers referring to the operator's Secret", func(m *manifests) {
			workers(*m).Volumes = append(workers(*m).Volumes, corev1.Volume{Name: "op", VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: operatorSecretName}}})
		}},
		{"init Job running another command", func(m *manifests) { initc(*m).Command[1] = "secure" }},
		{"init as the worker identity", func(m *manifests) {
			i := slices.Index(initc(*m).Command, "--zk-auth-file")
			initc(*m).Command[i+1] = "/run/secrets/snowflake/zk-worker/auth"
		}},
		{"init without --zk-worker-auth-file", func(m *manifests) {
			i := slices.Index(initc(*m).Command, "--zk-worker-auth-file")
			initc(*m).Command = slices.Delete(initc(*m).Command, i, i+2)
		}},
		{"init Job not labelled as a ZooKeeper client", func(m *manifests) {
			delete(m.jobs[0].Spec.Template.Labels, "snowflake.io/zk-client")
		}},
		{"init Job's files readable by others", func(m *manifests) {
			mode := int32(0o444)
			job(*m).Volumes[0].Secret.DefaultMode = &mode
		}},
		{"init Job's files the process cannot read (no fsGroup)", func(m *manifests) { job(*m).SecurityContext.FSGroup = nil }},
		{"init Job's secret in the environment", func(m *manifests) {
			initc(*m).Env = append(initc(*m).Env, corev1.EnvVar{Name: "SNOWFLAKE_ZK_AUTH", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: operatorSecretName}, Key: keyZKOperator}}})
		}},
		{"a password in the environment", func(m *manifests) {
			worker(*m).Env = append(worker(*m).Env, corev1.EnvVar{Name: "SNOWFLAKE_REQUIREPASS", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secretName}, Key: keyRequirepass}}})
		}},
		{"files readable by others", func(m *manifests) {
			mode := int32(0o444)
			m.deployments[0].Spec.Template.Spec.Volumes[0].Secret.DefaultMode = &mode
		}},
		{"files the process cannot read (no fsGroup)", func(m *manifests) {
			m.deployments[0].Spec.Template.Spec.SecurityContext.FSGroup = nil
		}},
		{"no policies", func(m *manifests) { m.policies = nil }},
		{"ZooKeeper's client port open to all", func(m *manifests) { m.policies[0].Spec.Ingress[0].From = nil }},
		{"quorum ports open to the workers", func(m *manifests) {
			m.policies[0].Spec.Ingress[1].From = append(m.policies[0].Spec.Ingress[1].From,
				networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: zkClientLabels}})
		}},
		{"the ID port open to every namespace", func(m *manifests) {
			m.policies[1].Spec.Ingress[0].From[0].NamespaceSelector = &metav1.LabelSelector{}
		}},
		{"every port of the workers open", func(m *manifests) { m.policies[1].Spec.Ingress[1].Ports = nil }},
		{"workers not labelled as ZooKeeper clients", func(m *manifests) {
			delete(m.deployments[0].Spec.Template.Labels, "snowflake.io/zk-client")
		}},
	} {
		m := load(t)
		g.breakIt(&m)
		if ps := securityProblems(m); len(ps) == 0 {
			t.Errorf("%s: not reported", g.name)
		}
	}
}

// TestSecretsScript: secrets.sh writes the three files the generator
// reads, of the shape the daemon takes, not accessible to others, and
// never overwrites one.
func TestSecretsScript(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "secrets")
	if out, err := exec.Command("./secrets.sh", dir).CombinedOutput(); err != nil {
		t.Fatalf("secrets.sh: %v\n%s", err, out)
	}
	shape := map[string]*regexp.Regexp{
		keyZKOperator:  regexp.MustCompile(`^operator:[0-9a-f]{64}\n$`),
		keyZKWorker:    regexp.MustCompile(`^worker:[0-9a-f]{64}\n$`),
		keyRequirepass: regexp.MustCompile(`^[0-9a-f]{64}\n$`),
	}
	first := map[string]string{}
	for f, re := range shape {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !re.Match(b) {
			t.Errorf("%s: not of the shape %s", f, re)
		}
		st, _ := os.Stat(filepath.Join(dir, f))
		if st.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v, want 0600", f, st.Mode().Perm())
		}
		first[f] = string(b)
	}
	if first[keyZKOperator][len("operator:"):] == first[keyZKWorker][len("worker:"):] {
		t.Errorf("the operator and the worker have one password")
	}
	if out, err := exec.Command("./secrets.sh", dir).CombinedOutput(); err != nil || len(out) != 0 {
		t.Fatalf("secrets.sh again: %v, %q; want nothing written", err, out)
	}
	for f, want := range first {
		if b, _ := os.ReadFile(filepath.Join(dir, f)); string(b) != want {
			t.Errorf("%s rewritten by a second run", f)
		}
	}
}

// securityProblems lists every way the manifests fall short of secure as
// shipped.
func securityProblems(m manifests) []string {
	var ps []string
	add := func(format string, a ...any) { ps = append(ps, fmt.Sprintf(format, a...)) }

	// The Secrets: generated from files secrets.sh writes and git ignores.
	for name, want := range secretKeys {
		var gen *secretGenerator
		for i := range m.secrets {
			if m.secrets[i].Name == name {
				gen = &m.secrets[i]
			}
		}
		if gen == nil {
			add("kustomization.yaml generates no Secret %s", name)
			continue
		}
		var keys []string
		for _, f := range gen.Files {
			k, src, _ := strings.Cut(f, "=")
			keys = append(keys, k)
			if !strings.HasPrefix(src, "secrets/") {
				add("secret %s key %s from %q: want a file under secrets/ (secrets.sh)", name, k, src)
			}
		}
		if slices.Sort(keys); !slices.Equal(keys, want) {
			add("secret %s has keys %v, want %v", name, keys, want)
		}
	}
	if b, err := os.ReadFile(".gitignore"); err != nil || !regexp.MustCompile(`(?m)^/secrets/$`).Match(b) {
		add(".gitignore does not ignore /secrets/ (%v)", err)
	}

	if len(m.deployments) != 1 || len(m.deployments[0].Spec.Template.Spec.Containers) != 1 {
		add("want one Deployment (the workers) with one container")
		return ps
	}
	if len(m.jobs) != 1 || len(m.jobs[0].Spec.Template.Spec.Containers) != 1 {
		add("want one Job (snowflakectl init) with one container")
		return ps
	}
	pod := m.deployments[0].Spec.Template
	job := m.jobs[0].Spec.Template

	// Every pod that mounts the Secret: files its process may read and
	// others may not, no secret in the environment or the arguments, and
	// the operator identity in the init Job alone.
	type podRef struct {
		name string
		spec corev1.PodSpec
	}
	pods := []podRef{{"deployment " + m.deployments[0].Name, pod.Spec}, {"job " + m.jobs[0].Name, job.Spec}}
	for _, s := range m.statefulSets {
		pods = append(pods, podRef{"statefulset " + s.Name, s.Spec.Template.Spec})
	}
	// keyOf is the Secret key a file path in a container of the pod reads,
	// or ""; mounted, every key a container mounts.
	keyOf, mounted := secretFiles()
	for i, p := range pods {
		ps = append(ps, secretVolumeProblems(p.name, p.spec)...)
		for _, c := range append(slices.Clone(p.spec.InitContainers), p.spec.Containers...) {
			ps = append(ps, containerProblems(p.name, c)...)
			if i != 1 && slices.Contains(mounted(p.spec, c), keyZKOperator) {
				add("%s: container %s mounts the operator identity: only the init Job may (a compromised pod would own the fleet's root)", p.name, c.Name)
			}
		}
		for _, v := range p.spec.Volumes {
			if i != 1 && v.Secret != nil && v.Secret.SecretName == operatorSecretName {
				add("%s: volume %s refers to the Secret %s: only the init Job may (and a rotation of it would roll this pod)", p.name, v.Name, operatorSecretName)
			}
		}
	}

	// The init Job: snowflakectl init as the operator identity, naming the
	// worker's, a ZooKeeper client.
	ic := job.Spec.Containers[0]
	argv := append(slices.Clone(ic.Command), ic.Args...)
	if len(argv) < 2 || argv[1] != "init" {
		add("job %s: runs %v, want snowflakectl init", m.jobs[0].Name, argv)
	}
	arg := func(flag string) string {
		for i, a := range argv {
			if a == flag && i+1 < len(argv) {
				return argv[i+1]
			}
			if v, ok := strings.CutPrefix(a, flag+"="); ok {
				return v
			}
		}
		return ""
	}
	if k := keyOf(job.Spec, ic, arg("--zk-auth-file")); k != keyZKOperator {
		add("init: --zk-auth-file %q reads key %q, want %s of %s", arg("--zk-auth-file"), k, keyZKOperator, operatorSecretName)
	}
	if k := keyOf(job.Spec, ic, arg("--zk-worker-auth-file")); k != keyZKWorker {
		add("init: --zk-worker-auth-file %q reads key %q, want %s of %s", arg("--zk-worker-auth-file"), k, keyZKWorker, secretName)
	}
	if !matchesMap(zkClientLabels, job.Labels) {
		add("the init Job's pods are not labelled %v: ZooKeeper's policy keeps them out", zkClientLabels)
	}

	// The worker: its own identity and the password, never the operator's.
	wc := pod.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range wc.Env {
		env[e.Name] = e.Value
	}
	if k := keyOf(pod.Spec, wc, env["SNOWFLAKE_ZK_AUTH_FILE"]); k != keyZKWorker {
		add("worker: SNOWFLAKE_ZK_AUTH_FILE %q reads key %q, want %s of %s", env["SNOWFLAKE_ZK_AUTH_FILE"], k, keyZKWorker, secretName)
	}
	if k := keyOf(pod.Spec, wc, env["SNOWFLAKE_REQUIREPASS_FILE"]); k != keyRequirepass {
		add("worker: SNOWFLAKE_REQUIREPASS_FILE %q reads key %q, want %s of %s", env["SNOWFLAKE_REQUIREPASS_FILE"], k, keyRequirepass, secretName)
	}

	// Reachability.
	var zkLabels map[string]string
	for _, s := range m.statefulSets {
		if s.Name == "zookeeper" {
			zkLabels = s.Spec.Template.Labels
		}
	}
	if zkLabels == nil {
		add("no StatefulSet zookeeper")
		return ps
	}
	if !matchesMap(zkClientLabels, pod.Labels) {
		add("the worker pods are not labelled %v: ZooKeeper's policy keeps them out", zkClientLabels)
	}
	for _, want := range []struct {
		what   string
		labels map[string]string
		ports  map[int32]map[string]string
	}{
		{"zookeeper", zkLabels, map[int32]map[string]string{2181: zkClientLabels, 2888: zkLabels, 3888: zkLabels}},
		{"snowflaked", pod.Labels, map[int32]map[string]string{7609: idClientLabels, 7610: adminClientLabels}},
	} {
		allowed, open := ingress(m.policies, want.labels)
		for _, o := range open {
			add("%s: %s", want.what, o)
		}
		if allowed == nil {
			add("%s: no NetworkPolicy selects its pods: every pod reaches every port", want.what)
			continue
		}
		for p, from := range allowed {
			w, ok := want.ports[p]
			if !ok {
				add("%s: port %d is open (to %v), want only %v", want.what, p, from, slices.Sorted(maps.Keys(want.ports)))
				continue
			}
			for _, f := range from {
				if !maps.Equal(f, w) {
					add("%s: port %d open to pods %v, want only %v", want.what, p, f, w)
				}
			}
		}
		for p := range want.ports {
			if len(allowed[p]) == 0 {
				add("%s: port %d reachable by no pod", want.what, p)
			}
		}
	}
	return ps
}

// secretVolumeProblems: the pod's Secret files are readable by its process
// (group fsGroup, the process's group) and by no other user.
func secretVolumeProblems(name string, spec corev1.PodSpec) []string {
	var ps []string
	sc := spec.SecurityContext
	ownGroup := sc != nil && sc.FSGroup != nil && sc.RunAsGroup != nil && *sc.FSGroup == *sc.RunAsGroup
	for _, v := range spec.Volumes {
		if v.Secret == nil {
			continue
		}
		def := int32(0o644) // the API's default
		if v.Secret.DefaultMode != nil {
			def = *v.Secret.DefaultMode
		}
		// The files are root's, group fsGroup: the process reads them
		// through the group bit, others must have none.
		for _, it := range v.Secret.Items {
			mode := def
			if it.Mode != nil {
				mode = *it.Mode
			}
			if mode&0o007 != 0 {
				ps = append(ps, fmt.Sprintf("%s: volume %s key %s: mode %#o lets others read the secret (the daemon refuses such a file)", name, v.Name, it.Key, mode))
			}
			if mode&0o040 == 0 || !ownGroup {
				ps = append(ps, fmt.Sprintf("%s: volume %s key %s: mode %#o, fsGroup the process's group %v: the process cannot read it", name, v.Name, it.Key, mode, ownGroup))
			}
		}
	}
	return ps
}

// containerProblems: no secret in a container's environment, and no
// credentials (or their absence) in its arguments.
func containerProblems(pod string, c corev1.Container) []string {
	var ps []string
	if len(c.EnvFrom) > 0 {
		ps = append(ps, fmt.Sprintf("%s/%s: envFrom puts whole objects into the environment", pod, c.Name))
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			ps = append(ps, fmt.Sprintf("%s/%s: env %s from a Secret: a secret in the environment shows in /proc and crash dumps; mount it as a file", pod, c.Name, e.Name))
		}
		if slices.Contains([]string{"SNOWFLAKE_ZK_AUTH", "SNOWFLAKE_REQUIREPASS", "SNOWFLAKE_ZK_INSECURE"}, e.Name) {
			ps = append(ps, fmt.Sprintf("%s/%s: env %s", pod, c.Name, e.Name))
		}
	}
	if slices.ContainsFunc(append(slices.Clone(c.Command), c.Args...), func(a string) bool {
		return strings.HasPrefix(a, "--zk-insecure") || strings.HasPrefix(a, "--zk-auth=") || a == "--zk-auth"
	}) {
		ps = append(ps, fmt.Sprintf("%s/%s: runs without a credentials file (--zk-insecure or --zk-auth in its arguments)", pod, c.Name))
	}
	return ps
}

// secretFiles returns keyOf, the key a file path in a container reads, when
// it comes from the Secret that key belongs in (else ""), and mounted, every Secret key a container
// mounts.
func secretFiles() (keyOf func(corev1.PodSpec, corev1.Container, string) string, mounted func(corev1.PodSpec, corev1.Container) []string) {
	vols := func(spec corev1.PodSpec) map[string]*corev1.SecretVolumeSource {
		vs := map[string]*corev1.SecretVolumeSource{}
		for _, v := range spec.Volumes {
			if v.Secret != nil {
				vs[v.Name] = v.Secret
			}
		}
		return vs
	}
	keyOf = func(spec corev1.PodSpec, c corev1.Container, file string) string {
		vs := vols(spec)
		for _, vm := range c.VolumeMounts {
			s := vs[vm.Name]
			if s == nil || !vm.ReadOnly || vm.SubPath != "" {
				continue
			}
			for _, it := range s.Items {
				if path.Join(vm.MountPath, it.Path) == file && s.SecretName == secretOf(it.Key) {
					return it.Key
				}
			}
		}
		return ""
	}
	mounted = func(spec corev1.PodSpec, c corev1.Container) []string {
		vs := vols(spec)
		var keys []string
		for _, vm := range c.VolumeMounts {
			if s := vs[vm.Name]; s != nil {
				for _, it := range s.Items {
					keys = append(keys, it.Key)
				}
			}
		}
		return keys
	}
	return keyOf, mounted
}

// ingress is what the policies selecting pods of these labels admit: per
// port, the pod labels each peer selects (nil when no policy selects them),
// and whatever admits more than pods of this namespace by label (a rule
// without peers or ports, an ipBlock, a namespaceSelector, an expression).
func ingress(policies []*networkingv1.NetworkPolicy, labels map[string]string) (map[int32][]map[string]string, []string) {
	var allowed map[int32][]map[string]string
	var open []string
	for _, np := range policies {
		if !matches(&np.Spec.PodSelector, labels) && !(len(np.Spec.PodSelector.MatchLabels) == 0 && len(np.Spec.PodSelector.MatchExpressions) == 0) {
			continue
		}
		if len(np.Spec.PolicyTypes) > 0 && !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
			continue
		}
		if allowed == nil {
			allowed = map[int32][]map[string]string{}
		}
		for i, r := range np.Spec.Ingress {
			if len(r.From) == 0 || len(r.Ports) == 0 {
				open = append(open, fmt.Sprintf("policy %s rule %d admits every peer or every port", np.Name, i))
				continue
			}
			for _, p := range r.Ports {
				if p.Port == nil || p.Port.IntVal == 0 || p.EndPort != nil {
					open = append(open, fmt.Sprintf("policy %s rule %d: a port range or a named port", np.Name, i))
					continue
				}
				for _, f := range r.From {
					if f.IPBlock != nil || f.NamespaceSelector != nil || f.PodSelector == nil || len(f.PodSelector.MatchExpressions) > 0 || len(f.PodSelector.MatchLabels) == 0 {
						open = append(open, fmt.Sprintf("policy %s rule %d: a peer beyond this namespace's pods by label (%+v)", np.Name, i, f))
						continue
					}
					allowed[p.Port.IntVal] = append(allowed[p.Port.IntVal], f.PodSelector.MatchLabels)
				}
			}
		}
	}
	return allowed, open
}
