package k8s

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// imageEntry is one entry of kustomization.yaml's images: (kustomize's
// image transformer): a container image named Name becomes NewName (when
// set) with Digest, else NewTag, else its own tag or digest.
type imageEntry struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	NewTag  string `json:"newTag,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

// splitRef is a reference's name and what follows it (":tag", "@digest",
// ":tag@digest" or ""). A colon before the last slash is a registry port.
func splitRef(ref string) (name, rest string) {
	name = ref
	if i := strings.Index(name, "@"); i >= 0 {
		name, rest = name[:i], name[i:]
	}
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, rest = name[:i], name[i:]+rest
	}
	return name, rest
}

// applyImages is what kustomize's images: make of a container's image.
func applyImages(ref string, entries []imageEntry) string {
	name, rest := splitRef(ref)
	for _, e := range entries {
		if e.Name != name {
			continue
		}
		if e.NewName != "" {
			name = e.NewName
		}
		switch {
		case e.Digest != "":
			rest = "@" + e.Digest
		case e.NewTag != "":
			rest = ":" + e.NewTag
		}
		return name + rest
	}
	return ref
}

var pinnedRef = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)

// qualifiedRef: the reference's first component is a registry host (a dot
// or a port in it, or localhost), as Docker reads a reference; without one
// the runtime pulls from Docker Hub.
func qualifiedRef(ref string) bool {
	name, _ := splitRef(ref)
	host, _, ok := strings.Cut(name, "/")
	return ok && (strings.ContainsAny(host, ".:") || host == "localhost")
}

// podTemplates is every pod template of the workloads, with the file,
// kind and name it is in.
func podTemplates(m manifests) []struct {
	file, what string
	spec       corev1.PodSpec
} {
	var out []struct {
		file, what string
		spec       corev1.PodSpec
	}
	add := func(kind, name string, spec corev1.PodSpec) {
		out = append(out, struct {
			file, what string
			spec       corev1.PodSpec
		}{m.fileOf(kind, name), strings.ToLower(kind) + " " + name, spec})
	}
	for _, d := range m.deployments {
		add("Deployment", d.Name, d.Spec.Template.Spec)
	}
	for _, s := range m.statefulSets {
		add("StatefulSet", s.Name, s.Spec.Template.Spec)
	}
	for _, j := range m.jobs {
		add("Job", j.Name, j.Spec.Template.Spec)
	}
	return out
}

// imageProblems: every container of every Deployment, StatefulSet and Job
// runs, after the kustomization's images:, a fully qualified reference
// pinned by digest.
func imageProblems(m manifests) []string {
	var ps []string
	for _, p := range podTemplates(m) {
		for _, c := range append(slices.Clone(p.spec.InitContainers), p.spec.Containers...) {
			ref := applyImages(c.Image, m.images)
			from := ""
			if ref != c.Image {
				from = fmt.Sprintf(" (%q after kustomization.yaml's images:)", ref)
			}
			if !qualifiedRef(ref) {
				ps = append(ps, fmt.Sprintf("%s: %s container %s: image %q%s is not fully qualified: no registry host, so it resolves to Docker Hub (make k8s-push REGISTRY=... pins your own)", p.file, p.what, c.Name, c.Image, from))
			}
			if !pinnedRef.MatchString(ref) {
				ps = append(ps, fmt.Sprintf("%s: %s container %s: image %q%s is not pinned by digest (@sha256:<64 hex>): a tag can be moved under a running fleet (make k8s-push REGISTRY=... pins your own)", p.file, p.what, c.Name, c.Image, from))
			}
		}
	}
	for _, e := range m.images {
		if e.NewTag != "" && e.Digest == "" {
			ps = append(ps, fmt.Sprintf("kustomization.yaml: images: %s has newTag %q and no digest", e.Name, e.NewTag))
		}
	}
	return ps
}

// TestImagesQualifiedAndPinned: the kit as shipped runs only fully
// qualified, pinned references (the placeholders in registry.invalid until
// make k8s-push writes yours), and every image entry is used.
func TestImagesQualifiedAndPinned(t *testing.T) {
	m := load(t)
	for _, p := range imageProblems(m) {
		t.Error(p)
	}
	for _, e := range m.images {
		used := false
		for _, p := range podTemplates(m) {
			for _, c := range append(slices.Clone(p.spec.InitContainers), p.spec.Containers...) {
				if n, _ := splitRef(c.Image); n == e.Name {
					used = true
				}
			}
		}
		if !used {
			t.Errorf("kustomization.yaml: images: entry %s matches no container image", e.Name)
		}
	}
}

// copyKit copies the kustomization and its manifests into a temporary
// directory and returns it.
func copyKit(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files, _ := filepath.Glob("*.yaml")
	files = append(files, "secrets.sh", "push.sh")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func editFile(t *testing.T, file, old, new string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q", file, old)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestImageCheckCatchesBadImages is the control: a copy of the kit with an
// unqualified or unpinned reference fails the check, with a message naming
// the file, the container and the reference.
func TestImageCheckCatchesBadImages(t *testing.T) {
	const zeros = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	for _, c := range []struct {
		name, file, old, new string
		want                 []string
	}{
		{"no images: entry for the workers", "kustomization.yaml",
			"  - name: snowfleet/snowflaked\n    newName: registry.invalid/snowfleet/snowflaked\n    digest: " + zeros + "\n", "",
			[]string{"snowflaked-deployment.yaml: deployment snowflaked container snowflaked: image \"snowfleet/snowflaked\" is not fully qualified", "not pinned by digest", "snowflakectl-init-job.yaml: job snowflakectl-init container init"}},
		{"a tag, not a digest", "kustomization.yaml",
			"    newName: registry.invalid/snowfleet/zookeeper\n    digest: " + zeros, "    newName: registry.invalid/snowfleet/zookeeper\n    newTag: \"3.8\"",
			[]string{"zookeeper-statefulset.yaml: statefulset zookeeper container zookeeper: image \"zookeeper\" (\"registry.invalid/snowfleet/zookeeper:3.8\" after kustomization.yaml's images:) is not pinned by digest"}},
		{"a Docker Hub name", "kustomization.yaml",
			"newName: registry.invalid/snowfleet/zookeeper", "newName: library/zookeeper",
			[]string{"zookeeper-statefulset.yaml: statefulset zookeeper container zookeeper: image \"zookeeper\" (\"library/zookeeper@" + zeros + "\" after kustomization.yaml's images:) is not fully qualified"}},
		{"a manifest naming an image no entry rewrites", "snowflakectl-init-job.yaml",
			"image: snowfleet/snowflaked", "image: busybox:1.36",
			[]string{"snowflakectl-init-job.yaml: job snowflakectl-init container init: image \"busybox:1.36\" is not fully qualified", "\"busybox:1.36\" is not pinned"}},
		{"a short digest", "kustomization.yaml", zeros, "sha256:0000",
			[]string{"is not pinned by digest"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyKit(t)
			editFile(t, filepath.Join(dir, c.file), c.old, c.new)
			ps := strings.Join(imageProblems(loadDir(t, dir)), "\n")
			for _, w := range c.want {
				if !strings.Contains(ps, w) {
					t.Errorf("problems lack %q:\n%s", w, ps)
				}
			}
		})
	}
}

// readImages decodes the images: of a kustomization file.
func readImages(t *testing.T, file string) []imageEntry {
	t.Helper()
	var k struct {
		Images []imageEntry `json:"images"`
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return k.Images
}

// TestPushScriptSetImages: push.sh set-images writes the images: block
// make k8s-push leaves (the rest of the file as it was, the check passing),
// and refuses a reference with no registry host or no digest.
func TestPushScriptSetImages(t *testing.T) {
	dir := copyKit(t)
	file := filepath.Join(dir, "kustomization.yaml")
	before, _ := os.ReadFile(file)
	d1 := "sha256:" + strings.Repeat("a1", 32)
	d2 := "sha256:" + strings.Repeat("b2", 32)
	out, err := exec.Command("./push.sh", "set-images", file,
		"snowfleet/snowflaked=registry.example.com:5000/team/snowflaked:v1.2@"+d1,
		"zookeeper=docker.io/library/zookeeper:3.8@"+d2).CombinedOutput()
	if err != nil {
		t.Fatalf("push.sh set-images: %v\n%s", err, out)
	}
	want := []imageEntry{
		{Name: "snowfleet/snowflaked", NewName: "registry.example.com:5000/team/snowflaked", Digest: d1},
		{Name: "zookeeper", NewName: "docker.io/library/zookeeper", Digest: d2},
	}
	if got := readImages(t, file); !slices.Equal(got, want) {
		t.Errorf("images: %+v, want %+v", got, want)
	}
	after, _ := os.ReadFile(file)
	cut := func(b []byte) string { s, _, _ := strings.Cut(string(b), "\nimages:"); return s }
	if cut(before) != cut(after) {
		t.Errorf("set-images changed more than the images: block:\n%s", after)
	}
	m := loadDir(t, dir)
	if ps := imageProblems(m); len(ps) > 0 {
		t.Errorf("after set-images: %v", ps)
	}
	if got := applyImages(m.deployments[0].Spec.Template.Spec.Containers[0].Image, m.images); got != "registry.example.com:5000/team/snowflaked@"+d1 {
		t.Errorf("the workers run %s", got)
	}
	for _, bad := range []string{
		"snowfleet/snowflaked=snowfleet/snowflaked@" + d1,      // Docker Hub
		"snowfleet/snowflaked=snowflaked@" + d1,                // Docker Hub
		"snowfleet/snowflaked=registry.example.com/snowflaked", // no digest
		"snowfleet/snowflaked=registry.example.com/snowflaked:v1",
		"snowfleet/snowflaked=registry.example.com/snowflaked@sha256:abc",
	} {
		if out, err := exec.Command("./push.sh", "set-images", file, bad).CombinedOutput(); err == nil {
			t.Errorf("set-images %s: accepted\n%s", bad, out)
		}
	}
	if got := readImages(t, file); !slices.Equal(got, want) {
		t.Errorf("a refused set-images changed the file: %+v", got)
	}
}

// TestPushScript runs push.sh REGISTRY end to end against a fake docker
// (no registry here): it tags and pushes each image under the registry,
// reads back the digest the push gave, and pins it in the kustomization.
func TestPushScript(t *testing.T) {
	dir := copyKit(t)
	bin := t.TempDir()
	log := filepath.Join(bin, "docker.log")
	digest := "sha256:" + strings.Repeat("c3", 32)
	// docker inspect answers a RepoDigests list in which the pushed
	// repository's digest is not first (another registry's is).
	fake := `#!/bin/sh
echo "$*" >>` + log + `
case $1 in
inspect) eval "ref=\${$#}"; echo "other.example.com/x@sha256:` + strings.Repeat("dd", 32) + `"; echo "${ref%:*}@` + digest + `"; echo ;;
esac
`
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "kustomization.yaml")
	run := func(env []string, args ...string) (string, error) {
		cmd := exec.Command("./push.sh", args...)
		cmd.Env = append(os.Environ(), append([]string{"PATH=" + bin + ":" + os.Getenv("PATH"), "SKIP_BUILD=1", "VERSION=v9", "KUSTOMIZATION=" + file}, env...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(nil, "registry.example.com/team/"); err != nil {
		t.Fatalf("push.sh: %v\n%s", err, out)
	}
	calls, _ := os.ReadFile(log)
	for _, w := range []string{
		"tag snowfleet/snowflaked:latest registry.example.com/team/snowflaked:v9",
		"push registry.example.com/team/snowflaked:v9",
		"tag snowfleet/zookeeper:3.8 registry.example.com/team/zookeeper:3.8",
		"push registry.example.com/team/zookeeper:3.8",
	} {
		if !strings.Contains(string(calls), w+"\n") {
			t.Errorf("docker was not run with %q:\n%s", w, calls)
		}
	}
	want := []imageEntry{
		{Name: "snowfleet/snowflaked", NewName: "registry.example.com/team/snowflaked", Digest: digest},
		{Name: "zookeeper", NewName: "registry.example.com/team/zookeeper", Digest: digest},
	}
	if got := readImages(t, file); !slices.Equal(got, want) {
		t.Errorf("images: %+v, want %+v", got, want)
	}
	if ps := imageProblems(loadDir(t, dir)); len(ps) > 0 {
		t.Errorf("after push.sh: %v", ps)
	}

	// The official ZooKeeper image, pinned: nothing built or pushed for it.
	os.Remove(log)
	official := "docker.io/library/zookeeper:3.8@sha256:" + strings.Repeat("e4", 32)
	if out, err := run([]string{"ZK_IMAGE_REF=" + official}, "localhost:5000"); err != nil {
		t.Fatalf("push.sh with ZK_IMAGE_REF: %v\n%s", err, out)
	}
	if calls, _ := os.ReadFile(log); strings.Contains(string(calls), "zookeeper") {
		t.Errorf("ZK_IMAGE_REF given, docker still ran for ZooKeeper:\n%s", calls)
	}
	if got := readImages(t, file); len(got) != 2 || got[0].NewName != "localhost:5000/snowflaked" ||
		got[1] != (imageEntry{Name: "zookeeper", NewName: "docker.io/library/zookeeper", Digest: "sha256:" + strings.Repeat("e4", 32)}) {
		t.Errorf("images: %+v", got)
	}

	// Refused before anything is built or pushed.
	for _, c := range []struct {
		env      []string
		registry string
	}{
		{nil, "team"},                      // Docker Hub
		{nil, "snowfleet/team"},            // Docker Hub
		{nil, "registry.example.com/x:v1"}, // a tag
		{[]string{"ZK_IMAGE_REF=zookeeper:3.8"}, "registry.example.com/team"},
	} {
		os.Remove(log)
		if out, err := run(c.env, c.registry); err == nil {
			t.Errorf("push.sh %s %v: accepted\n%s", c.registry, c.env, out)
		}
		if _, err := os.Stat(log); err == nil {
			t.Errorf("push.sh %s %v: ran docker before refusing", c.registry, c.env)
		}
	}
}

// TestKustomizeBuild: where kubectl is installed, kustomize itself builds
// the kit (with generated secrets, in a copy), every container runs the
// reference this test's reading of images: gives, and every object is in
// the fleet's namespace.
func TestKustomizeBuild(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl not installed: kustomize's own build not checked")
	}
	dir := copyKit(t)
	if out, err := exec.Command(filepath.Join(dir, "secrets.sh")).CombinedOutput(); err != nil {
		t.Fatalf("secrets.sh: %v\n%s", err, out)
	}
	out, err := exec.Command("kubectl", "kustomize", dir).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v", err)
	}
	m := load(t)
	want := map[string]string{}
	for _, p := range podTemplates(m) {
		for _, c := range p.spec.Containers {
			want[p.what+"/"+c.Name] = applyImages(c.Image, m.images)
		}
	}
	got := map[string]string{}
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(out), -1) {
		var o struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
			Spec struct {
				Template struct {
					Spec corev1.PodSpec `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatal(err)
		}
		for _, c := range o.Spec.Template.Spec.Containers {
			got[strings.ToLower(o.Kind)+" "+o.Metadata.Name+"/"+c.Name] = c.Image
		}
		if o.Kind != "Namespace" && o.Metadata.Namespace != m.namespace {
			t.Errorf("kustomize puts %s %s in namespace %q, want %q", o.Kind, o.Metadata.Name, o.Metadata.Namespace, m.namespace)
		}
	}
	if len(got) == 0 || !maps.Equal(got, want) {
		t.Errorf("kustomize runs %v, the check read %v", got, want)
	}
}
