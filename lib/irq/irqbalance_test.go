package irq

import (
	"slices"
	"testing"
)

func TestFindIrqbalance(t *testing.T) {
	n := newNode(t, 2)
	proc := func(pid, comm, cmdline string) {
		n.write("/proc/"+pid+"/comm", comm+"\n", 0o444)
		n.write("/proc/"+pid+"/cmdline", cmdline, 0o444)
	}
	proc("1", "systemd", "/sbin/init\x00")
	proc("812", "irqbalance", "/usr/sbin/irqbalance\x00--foreground\x00--policyscript=/usr/lib/gpuprep/irqbalance-policy\x00")
	proc("813", "irqbalanced", "/usr/sbin/irqbalanced\x00")
	proc("900", "irqbalance", "") // a zombie
	proc("901", "irqbalance", "irqbalance\x00")
	proc("0900", "irqbalance", "irqbalance\x00") // not a pid folder
	n.write("/proc/self", "", 0o644)
	n.write("/proc/1000/stat", "", 0o644) // exited: no comm any more
	got, err := FindIrqbalance(n.r)
	want := []Irqbalance{{PID: 812, PolicyScript: "/usr/lib/gpuprep/irqbalance-policy"}, {PID: 901}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("FindIrqbalance = %+v, %v; want %+v", got, err, want)
	}
	if got, err := FindIrqbalance(newNode(t, 1).r); err == nil || got != nil {
		t.Errorf("no /proc: %v, %v", got, err)
	}
}

// TestPolicyScriptArg reads --policyscript as irqbalance's getopt_long
// does.
func TestPolicyScriptArg(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"irqbalance"}, ""},
		{[]string{"irqbalance", "--foreground", "--policyscript=/a"}, "/a"},
		{[]string{"irqbalance", "--policyscript", "/a", "--foreground"}, "/a"},
		{[]string{"irqbalance", "--pol=/a"}, "/a"},
		{[]string{"irqbalance", "--po=/a"}, ""}, // ambiguous: powerthresh, policyscript
		{[]string{"irqbalance", "--p", "/a"}, ""},
		{[]string{"irqbalance", "-l", "/a"}, "/a"},
		{[]string{"irqbalance", "-l/a"}, "/a"},
		{[]string{"irqbalance", "-fl/a"}, "/a"},
		{[]string{"irqbalance", "-fj", "-l", "/a"}, "/a"},
		{[]string{"irqbalance", "-i", "-l", "-l", "/b"}, "/b"}, // -i takes "-l" as its value
		{[]string{"irqbalance", "-i5", "-l", "/b"}, "/b"},
		{[]string{"irqbalance", "--banirq", "--policyscript=/a"}, ""}, // --banirq's value
		{[]string{"irqbalance", "-l", "/a", "--policyscript=/b"}, "/b"},
		{[]string{"irqbalance", "--", "-l", "/a"}, ""},
		{[]string{"irqbalance", "-l"}, ""},
		{[]string{"irqbalance", "--policyscript"}, ""},
		{[]string{"irqbalance", "--version", "--interval", "5", "-l", "/a"}, "/a"},
	} {
		if got := PolicyScriptArg(tc.args); got != tc.want {
			t.Errorf("PolicyScriptArg(%q) = %q; want %q", tc.args, got, tc.want)
		}
	}
}
