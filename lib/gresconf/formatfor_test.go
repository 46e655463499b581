package gresconf

import (
	"bytes"
	"strings"
	"testing"
)

// FormatFor prefixes every line with NodeName=; the parser reads
// the devices back for those nodes only; a bad node name is refused.
func TestFormatGresConfFor(t *testing.T) {
	devs := []Device{{Name: "gpu", Type: "h100", File: "/dev/nvidia0", Count: 1}, {Name: "gpu", Type: "h100", File: "/dev/nvidia1", Count: 1}}
	var b bytes.Buffer
	if err := FormatFor(&b, []string{"hdr"}, "off", "dgx[01-02]", devs); err != nil {
		t.Fatal(err)
	}
	want := "# hdr\nNodeName=dgx[01-02] AutoDetect=off\nNodeName=dgx[01-02] Name=gpu Type=h100 File=/dev/nvidia0\nNodeName=dgx[01-02] Name=gpu Type=h100 File=/dev/nvidia1\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	c, err := Parse("g", b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ForNode("dgx02"); len(got) != 2 || got[1].File != "/dev/nvidia1" {
		t.Errorf("dgx02: %+v", got)
	}
	if got := c.ForNode("dgx03"); len(got) != 0 {
		t.Errorf("dgx03: %+v", got)
	}
	if ad, err := c.AutoDetectFor("dgx01"); ad != "off" || err != nil || c.AutoDetect != "" {
		t.Errorf("AutoDetect: %q %v global %q", ad, err, c.AutoDetect)
	}
	for _, bad := range []string{"", "a b", "n#1", "x=y", "dgx[02-01]"} {
		if err := FormatFor(&b, nil, "off", bad, devs); err == nil || !strings.Contains(err.Error(), "NodeName") {
			t.Errorf("node %q: %v", bad, err)
		}
	}
}

// A count in a message agrees with its noun.
func TestCountMismatchPlural(t *testing.T) {
	_, err := Parse("g", []byte("Name=gpu File=/dev/nvidia0 Count=2\n"))
	if err == nil || !strings.Contains(err.Error(), "does not match the 1 file of File=") {
		t.Errorf("%v", err)
	}
}
