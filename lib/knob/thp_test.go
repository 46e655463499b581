package knob

import (
	"testing"
)

func TestTHPRoundTrip(t *testing.T) {
	r := writeTree(t, smallNode().files())
	en := newTHP(r, "thp_enabled", "enabled")
	df := newTHP(r, "thp_defrag", "defrag")
	orig, _ := roundTrip(t, en, "never")
	if orig != "madvise" {
		t.Fatalf("orig %q", orig)
	}
	roundTrip(t, df, "defer+madvise")
	roundTrip(t, df, " NEVER ")
	// A plain file is given the kernel's form back.
	mustApply(t, en, "always")
	if got := get(t, r, thpDir+"/enabled"); got != "[always] madvise never" {
		t.Fatalf("file after Apply: %q", got)
	}
}

func TestTHPKernelForm(t *testing.T) {
	// A kernel reads back the bracketed list itself: no second write.
	r := writeTree(t, smallNode().files())
	kfs := newKernelFS(r)
	p := thpDir + "/enabled"
	writes := 0
	kfs.side[p] = func(v string) {
		writes++
		set(t, r, p, map[string]string{"always": "[always] madvise never", "never": "always madvise [never]"}[v])
	}
	k := newTHP(kfs, "thp_enabled", "enabled")
	mustApply(t, k, "never")
	if writes != 1 || mustRead(t, k) != "never" {
		t.Fatalf("writes %d, read %q", writes, mustRead(t, k))
	}
	// A kernel that keeps madvise.
	kfs.side[p] = func(string) { set(t, r, p, "always [madvise] never") }
	wantMismatch(t, k.Apply("always"), "always", "madvise")
}

func TestTHPDesiredErrors(t *testing.T) {
	r := writeTree(t, smallNode().files())
	en := newTHP(r, "thp_enabled", "enabled")
	_, err := en.Desired("defer")
	wantErr(t, err, "thp_enabled", `"defer"`, "offered: always madvise never")
	_, err = en.Desired("")
	wantErr(t, err, "thp_enabled")
	wantErr(t, en.Apply("[never]"), "thp_enabled", "not a THP mode")
}

func TestTHPGarbage(t *testing.T) {
	p := thpDir + "/enabled"
	for _, content := range []string{
		"always madvise never",       // no brackets
		"[always] [madvise] never",   // two
		"always [madvise never",      // unclosed
		"always [] never",            // empty
		"always [mad\x00vise] never", // control byte
		"",
	} {
		r := writeTree(t, smallNode().files())
		set(t, r, p, content)
		k := newTHP(r, "thp_enabled", "enabled")
		_, err := k.Read()
		wantErr(t, err, "thp_enabled", p)
		_, err = k.Desired("never")
		wantErr(t, err, p)
	}
}

func TestTHPUnsupported(t *testing.T) {
	r := writeTree(t, map[string]string{"/proc/sys/vm/swappiness": "60"})
	k := newTHP(r, "thp_defrag", "defrag")
	_, err := k.Read()
	wantUnsupported(t, err)
	_, err = k.Desired("never")
	wantUnsupported(t, err)
	wantUnsupported(t, k.Apply("never"))
}
