package k8s

import (
	"crypto/sha1"
	"encoding/base64"
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
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The credentials Secrets and their keys (kustomization.yaml's
// secretGenerator, secrets.sh): one Secret per consumer. The client
// password (a client copies it, and nothing else), the worker identity, and
// the operator's, which only the init Job refers to (so rotating it touches
// the Job alone).
const (
	clientSecretName   = "snowflake-client"
	workerSecretName   = "snowflake-worker"
	operatorSecretName = "snowflake-operator"
	// The operator's digest id (no password): ZooKeeper's superDigest.
	superDigestSecretName = "zookeeper-superdigest"
	keyZKOperator         = "zk-operator"
	keySuperDigest        = "digest"
	keyZKWorker           = "zk-worker"
	keyRequirepass        = "requirepass"
)

// secretKeys is which Secret holds each key.
var secretKeys = map[string][]string{
	clientSecretName:      {keyRequirepass},
	workerSecretName:      {keyZKWorker},
	operatorSecretName:    {keyZKOperator},
	superDigestSecretName: {keySuperDigest},
}

// secretConsumers are the only workloads that may mount each Secret.
var secretConsumers = map[string][]string{
	clientSecretName:      {"deployment snowflaked"},
	workerSecretName:      {"deployment snowflaked", "job snowflakectl-init"},
	operatorSecretName:    {"job snowflakectl-init"},
	superDigestSecretName: {"statefulset zookeeper"},
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

// The labels networkpolicies.yaml admits by: on pods, and (the same key)
// on the namespaces clients run in.
var (
	zkClientLabels    = map[string]string{"snowflake.io/zk-client": "true"}
	idClientLabels    = map[string]string{"snowflake.io/id-client": "true"}
	adminClientLabels = map[string]string{"snowflake.io/admin-client": "true"}
	// The cluster DNS, which the workers' egress allows.
	dnsNamespaceLabels = map[string]string{"kubernetes.io/metadata.name": "kube-system"}
	dnsPodLabels       = map[string]string{"k8s-app": "kube-dns"}
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
					j := (i + 1) % len(m.secrets)
					m.secrets[j].Files = append(m.secrets[j].Files, m.secrets[i].Files...)
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
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: clientSecretName}, Key: keyRequirepass}}})
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

		// A namespace of its own.
		{"no namespace: in the kustomization", func(m *manifests) { m.namespace = "" }},
		{"the default namespace", func(m *manifests) { m.namespace = "default" }},
		{"no Namespace object", func(m *manifests) { m.namespaces = nil }},
		{"the Namespace not enforcing restricted", func(m *manifests) { delete(m.namespaces[0].Labels, "pod-security.kubernetes.io/enforce") }},
		{"an object in another namespace", func(m *manifests) { m.services[0].Namespace = "default" }},
		{"an object naming no namespace", func(m *manifests) { m.hpas[0].Namespace = "" }},

		// Clients across namespaces: a namespace label and a pod label, both.
		{"the ID port from every pod of labelled namespaces", func(m *manifests) {
			policy(*m, "snowflaked").Spec.Ingress[0].From[0].PodSelector = nil
		}},
		{"the ID port from labelled pods of the fleet's namespace only", func(m *manifests) {
			policy(*m, "snowflaked").Spec.Ingress[0].From[0].NamespaceSelector = nil
		}},
		{"the namespace and pod selectors in two entries (either admits)", func(m *manifests) {
			r := &policy(*m, "snowflaked").Spec.Ingress[0]
			f := r.From[0]
			r.From = []networkingv1.NetworkPolicyPeer{{NamespaceSelector: f.NamespaceSelector}, {PodSelector: f.PodSelector}}
		}},
		{"the admin port from labelled pods of any namespace", func(m *manifests) {
			policy(*m, "snowflaked").Spec.Ingress[1].From[0].NamespaceSelector = &metav1.LabelSelector{}
		}},
		{"the ID port from an ipBlock", func(m *manifests) {
			r := &policy(*m, "snowflaked").Spec.Ingress[0]
			r.From = append(r.From, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}})
		}},
		{"ZooKeeper's client port from every labelled pod of every namespace", func(m *manifests) {
			policy(*m, "zookeeper").Spec.Ingress[0].From[1].NamespaceSelector = &metav1.LabelSelector{}
		}},

		// Worker egress: ZooKeeper and DNS only.
		{"no worker egress policy", func(m *manifests) { dropPolicy(m, "snowflaked-egress") }},
		{"no init Job egress policy", func(m *manifests) { dropPolicy(m, "snowflakectl-init-egress") }},
		{"worker egress anywhere", func(m *manifests) { policy(*m, "snowflaked-egress").Spec.Egress[0].To = nil }},
		{"worker egress to every port of ZooKeeper", func(m *manifests) { policy(*m, "snowflaked-egress").Spec.Egress[0].Ports = nil }},
		{"worker egress to the internet", func(m *manifests) {
			r := &policy(*m, "snowflaked-egress").Spec.Egress[0]
			r.To = append(r.To, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0"}})
		}},
		{"worker egress to ZooKeeper's quorum port", func(m *manifests) {
			r := &policy(*m, "snowflaked-egress").Spec.Egress[0]
			p := intstr.FromInt32(2888)
			r.Ports = append(r.Ports, networkingv1.NetworkPolicyPort{Port: &p})
		}},
		{"worker egress to port 53 of every namespace", func(m *manifests) {
			policy(*m, "snowflaked-egress").Spec.Egress[1].To[0].NamespaceSelector = &metav1.LabelSelector{}
		}},
		{"worker egress without DNS", func(m *manifests) {
			np := policy(*m, "snowflaked-egress")
			np.Spec.Egress = np.Spec.Egress[:1]
		}},
		{"a second policy opening worker egress", func(m *manifests) {
			np := policy(*m, "snowflaked-egress").DeepCopy()
			np.Name = "more"
			np.Spec.Egress = append(np.Spec.Egress, networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}, PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}}},
				Ports: np.Spec.Egress[0].Ports})
			m.policies = append(m.policies, np)
		}},

		// One Secret per consumer.
		{"the password in the workers' identity Secret", func(m *manifests) {
			for i := range m.secrets {
				if m.secrets[i].Name == workerSecretName {
					m.secrets[i].Files = append(m.secrets[i].Files, "requirepass=secrets/requirepass")
				}
			}
		}},
		{"the client Secret mounted by the init Job", func(m *manifests) {
			job(*m).Volumes = append(job(*m).Volumes, corev1.Volume{Name: "pw", VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: clientSecretName}}})
		}},
		{"the worker Secret mounted by ZooKeeper", func(m *manifests) {
			zk := &m.statefulSets[0].Spec.Template.Spec
			zk.Volumes = append(zk.Volumes, corev1.Volume{Name: "w", VolumeSource: corev1.VolumeSource{
				Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{
					LocalObjectReference: corev1.LocalObjectReference{Name: workerSecretName}}}}}}})
		}},
		{"the workers reading the password from the worker identity's Secret", func(m *manifests) {
			for i, v := range workers(*m).Volumes {
				if v.Name == "requirepass" {
					workers(*m).Volumes[i].Secret.SecretName = workerSecretName
				}
			}
		}},
	} {
		m := load(t)
		g.breakIt(&m)
		if ps := securityProblems(m); len(ps) == 0 {
			t.Errorf("%s: not reported", g.name)
		} else {
			t.Logf("%s: %s", g.name, ps[0])
		}
	}
}

// policy is the NetworkPolicy of that name.
func policy(m manifests, name string) *networkingv1.NetworkPolicy {
	for _, p := range m.policies {
		if p.Name == name {
			return p
		}
	}
	panic("no NetworkPolicy " + name)
}

func dropPolicy(m *manifests, name string) {
	m.policies = slices.DeleteFunc(m.policies, func(p *networkingv1.NetworkPolicy) bool { return p.Name == name })
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
			// Each Secret only where it is needed (one Secret per consumer).
			var names []string
			if v.Secret != nil {
				names = append(names, v.Secret.SecretName)
			}
			if v.Projected != nil {
				for _, src := range v.Projected.Sources {
					if src.Secret != nil {
						names = append(names, src.Secret.Name)
					}
				}
			}
			for _, n := range names {
				if who, ok := secretConsumers[n]; !ok {
					add("%s: volume %s refers to the Secret %s, which the kit does not generate", p.name, v.Name, n)
				} else if !slices.Contains(who, p.name) {
					add("%s: volume %s mounts the Secret %s: only %v may", p.name, v.Name, n, who)
				}
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
		add("init: --zk-worker-auth-file %q reads key %q, want %s of %s", arg("--zk-worker-auth-file"), k, keyZKWorker, workerSecretName)
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
		add("worker: SNOWFLAKE_ZK_AUTH_FILE %q reads key %q, want %s of %s", env["SNOWFLAKE_ZK_AUTH_FILE"], k, keyZKWorker, workerSecretName)
	}
	if k := keyOf(pod.Spec, wc, env["SNOWFLAKE_REQUIREPASS_FILE"]); k != keyRequirepass {
		add("worker: SNOWFLAKE_REQUIREPASS_FILE %q reads key %q, want %s of %s", env["SNOWFLAKE_REQUIREPASS_FILE"], k, keyRequirepass, clientSecretName)
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
	own := func(pods map[string]string) string { return peerKey(nil, pods) }
	for _, want := range []struct {
		what   string
		labels map[string]string
		ports  map[int32][]string
	}{
		{"zookeeper", zkLabels, map[int32][]string{
			2181: {own(zkClientLabels), peerKey(idClientLabels, zkClientLabels)},
			2888: {own(zkLabels)}, 3888: {own(zkLabels)}}},
		{"snowflaked", pod.Labels, map[int32][]string{
			7609: {peerKey(idClientLabels, idClientLabels)},
			7610: {peerKey(adminClientLabels, adminClientLabels)}}},
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
				if !slices.Contains(w, f) {
					add("%s: port %d open to %s, want only %v", want.what, p, f, w)
				}
			}
			for _, f := range w {
				if !slices.Contains(from, f) {
					add("%s: port %d not open to %s", want.what, p, f)
				}
			}
		}
		for p := range want.ports {
			if len(allowed[p]) == 0 {
				add("%s: port %d reachable by no pod", want.what, p)
			}
		}
	}

	// Egress: the workers and the init Job (which holds the operator
	// identity) reach ZooKeeper's client port and the cluster DNS only.
	ps = append(ps, egressProblems(m.policies, "deployment "+m.deployments[0].Name, pod.Labels, zkLabels)...)
	ps = append(ps, egressProblems(m.policies, "job "+m.jobs[0].Name, job.Labels, zkLabels)...)

	ps = append(ps, namespaceProblems(m)...)
	return ps
}

// namespaceProblems: the fleet has a namespace of its own, the
// kustomization's namespace:, which the kit makes (restricted pod
// security) and every object names.
func namespaceProblems(m manifests) []string {
	var ps []string
	ns := m.namespace
	if ns == "" || ns == "default" || strings.HasPrefix(ns, "kube-") {
		ps = append(ps, fmt.Sprintf("kustomization.yaml: namespace %q: the fleet needs a namespace of its own", ns))
	}
	var made *corev1.Namespace
	for _, n := range m.namespaces {
		if n.Name == ns {
			made = n
		}
	}
	if made == nil {
		ps = append(ps, fmt.Sprintf("no Namespace %q among the resources", ns))
	} else if made.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		ps = append(ps, fmt.Sprintf("namespace %s: pod-security.kubernetes.io/enforce %q, want restricted", ns, made.Labels["pod-security.kubernetes.io/enforce"]))
	}
	for _, k := range slices.Sorted(maps.Keys(m.objects)) {
		if strings.HasPrefix(k, "Namespace ") {
			continue
		}
		if got := m.objects[k].GetNamespace(); got != ns {
			ps = append(ps, fmt.Sprintf("%s: %s has namespace %q, want the fleet's %q", m.files[k], k, got, ns))
		}
	}
	return ps
}

// egressProblems: some policy restricts the egress of the pods of these
// labels, and every rule of every such policy goes to ZooKeeper's client
// port (its pods, this namespace) or to the cluster DNS (kube-dns in
// kube-system, port 53), and both are allowed.
func egressProblems(policies []*networkingv1.NetworkPolicy, what string, labels, zkLabels map[string]string) []string {
	var ps []string
	add := func(format string, a ...any) { ps = append(ps, fmt.Sprintf(what+": "+format, a...)) }
	selected, toZK, toDNS := false, false, map[corev1.Protocol]bool{}
	for _, np := range policies {
		if !matches(&np.Spec.PodSelector, labels) && !(len(np.Spec.PodSelector.MatchLabels) == 0 && len(np.Spec.PodSelector.MatchExpressions) == 0) {
			continue
		}
		if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
			if len(np.Spec.Egress) > 0 {
				add("policy %s has egress rules but no Egress in policyTypes", np.Name)
			}
			continue
		}
		selected = true
		for i, r := range np.Spec.Egress {
			if len(r.To) == 0 || len(r.Ports) == 0 {
				add("policy %s egress rule %d admits every destination or every port", np.Name, i)
				continue
			}
			for _, to := range r.To {
				zk := to.IPBlock == nil && to.NamespaceSelector == nil && to.PodSelector != nil &&
					len(to.PodSelector.MatchExpressions) == 0 && maps.Equal(to.PodSelector.MatchLabels, zkLabels)
				dns := to.IPBlock == nil && to.NamespaceSelector != nil && to.PodSelector != nil &&
					len(to.NamespaceSelector.MatchExpressions) == 0 && len(to.PodSelector.MatchExpressions) == 0 &&
					maps.Equal(to.NamespaceSelector.MatchLabels, dnsNamespaceLabels) && maps.Equal(to.PodSelector.MatchLabels, dnsPodLabels)
				if !zk && !dns {
					add("policy %s egress rule %d: a destination beyond ZooKeeper and the cluster DNS (%+v)", np.Name, i, to)
					continue
				}
				for _, p := range r.Ports {
					proto := corev1.ProtocolTCP
					if p.Protocol != nil {
						proto = *p.Protocol
					}
					port := int32(0)
					if p.Port != nil && p.Port.Type == intstr.Int && p.EndPort == nil {
						port = p.Port.IntVal
					}
					switch {
					case zk && port == 2181 && proto == corev1.ProtocolTCP:
						toZK = true
					case dns && port == 53 && (proto == corev1.ProtocolUDP || proto == corev1.ProtocolTCP):
						toDNS[proto] = true
					default:
						add("policy %s egress rule %d: port %v/%s to %s, want only ZooKeeper's 2181/TCP and DNS's 53", np.Name, i, p.Port, proto, map[bool]string{true: "ZooKeeper", false: "DNS"}[zk])
					}
				}
			}
		}
	}
	if !selected {
		add("no NetworkPolicy restricts its egress: it may reach anything")
		return ps
	}
	if !toZK {
		add("egress to ZooKeeper's client port 2181/TCP not allowed")
	}
	if !toDNS[corev1.ProtocolUDP] || !toDNS[corev1.ProtocolTCP] {
		add("egress to the cluster DNS (kube-dns in kube-system) on 53/UDP and 53/TCP not allowed")
	}
	return ps
}

// peerKey names a NetworkPolicy peer: pods of these labels in the policy's
// own namespace (ns nil), or in namespaces of the labels ns.
func peerKey(ns, pods map[string]string) string {
	if ns == nil {
		return fmt.Sprintf("pods %v of this namespace", pods)
	}
	return fmt.Sprintf("pods %v of namespaces %v", pods, ns)
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
// port, the peers (peerKey) each rule names (nil when no policy selects
// them), and whatever admits more than pods by label: a rule without peers
// or ports, an ipBlock, a namespaceSelector without a podSelector in the
// same entry (every pod of those namespaces), an empty selector, an
// expression.
func ingress(policies []*networkingv1.NetworkPolicy, labels map[string]string) (map[int32][]string, []string) {
	var allowed map[int32][]string
	var open []string
	byLabel := func(s *metav1.LabelSelector) bool {
		return s != nil && len(s.MatchExpressions) == 0 && len(s.MatchLabels) > 0
	}
	for _, np := range policies {
		if !matches(&np.Spec.PodSelector, labels) && !(len(np.Spec.PodSelector.MatchLabels) == 0 && len(np.Spec.PodSelector.MatchExpressions) == 0) {
			continue
		}
		if len(np.Spec.PolicyTypes) > 0 && !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
			continue
		}
		if allowed == nil {
			allowed = map[int32][]string{}
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
					if f.IPBlock != nil || !byLabel(f.PodSelector) || f.NamespaceSelector != nil && !byLabel(f.NamespaceSelector) {
						open = append(open, fmt.Sprintf("policy %s rule %d: a peer beyond pods by label, or beyond labelled pods of labelled namespaces (%+v)", np.Name, i, f))
						continue
					}
					var ns map[string]string
					if f.NamespaceSelector != nil {
						ns = f.NamespaceSelector.MatchLabels
					}
					allowed[p.Port.IntVal] = append(allowed[p.Port.IntVal], peerKey(ns, f.PodSelector.MatchLabels))
				}
			}
		}
	}
	return allowed, open
}

// TestSuperDigestAndClosedRoot (#36 item 2): the ZooKeeper pods take the
// operator's digest as superDigest from a file of Secret
// zookeeper-superdigest, secrets.sh writes that digest as ZooKeeper makes
// it (user:base64(sha1(user:password))), and the init Job closes
// ZooKeeper's / to the world's writes.
func TestSuperDigestAndClosedRoot(t *testing.T) {
	m := load(t)
	zk := m.statefulSets[0].Spec.Template.Spec
	cmd := strings.Join(zk.Containers[0].Command, " ")
	if !strings.Contains(cmd, "-Dzookeeper.DigestAuthenticationProvider.superDigest=$(cat /run/secrets/zk-super/digest)") {
		t.Errorf("the ZooKeeper container's command sets no superDigest from /run/secrets/zk-super/digest: %s", cmd)
	}
	mounted := false
	for _, v := range zk.Volumes {
		if v.Secret != nil && v.Secret.SecretName == superDigestSecretName {
			for _, vm := range zk.Containers[0].VolumeMounts {
				mounted = mounted || vm.Name == v.Name && vm.MountPath == "/run/secrets/zk-super"
			}
		}
	}
	if !mounted {
		t.Errorf("Secret %s is not mounted at /run/secrets/zk-super in the ZooKeeper container", superDigestSecretName)
	}
	if job := m.jobs[0].Spec.Template.Spec.Containers[0].Command; !slices.Contains(job, "--close-ensemble-root") {
		t.Errorf("the init Job does not close ZooKeeper's /: %q", job)
	}

	dir := t.TempDir()
	if out, err := exec.Command("./secrets.sh", dir).CombinedOutput(); err != nil {
		t.Fatalf("secrets.sh: %v\n%s", err, out)
	}
	op, err := os.ReadFile(filepath.Join(dir, keyZKOperator))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "zk-superdigest"))
	if err != nil {
		t.Fatal(err)
	}
	cred := strings.TrimSpace(string(op))
	sum := sha1.Sum([]byte(cred))
	want := strings.SplitN(cred, ":", 2)[0] + ":" + base64.StdEncoding.EncodeToString(sum[:])
	if strings.TrimSpace(string(got)) != want {
		t.Errorf("secrets.sh wrote superdigest %q for %q, want %q", got, cred, want)
	}
}
