package nccl

import (
	"strings"
	"testing"
)

func TestTaskPrologLines(t *testing.T) {
	got, err := TaskPrologLines([]Var{
		{Name: "NCCL_IB_HCA", Value: "=mlx5_0:1,mlx5_1:1"},
		{Name: "NCCL_SOCKET_IFNAME", Value: "^docker,lo"},
		{Name: "X", Value: " two words 'and' \"quotes\" $HOME "},
		{Name: "EMPTY", Value: ""},
	})
	want := "export NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n" +
		"export NCCL_SOCKET_IFNAME=^docker,lo\n" +
		"export X= two words 'and' \"quotes\" $HOME \n" +
		"export EMPTY=\n"
	if err != nil || got != want {
		t.Errorf("got %q, %v\nwant %q", got, err, want)
	}
	// Read it back the way slurmstepd's _proc_stdout does.
	for i, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		rest, _ := strings.CutPrefix(line, "export ")
		name, val, _ := strings.Cut(strings.TrimLeft(rest, " \t"), "=")
		if wantName := []string{"NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "X", "EMPTY"}[i]; name != wantName {
			t.Errorf("line %d: name %q", i, name)
		}
		if i == 0 && val != "=mlx5_0:1,mlx5_1:1" {
			t.Errorf("NCCL_IB_HCA reads back as %q", val)
		}
	}
	if s, err := TaskPrologLines(nil); s != "" || err != nil {
		t.Errorf("nil: %q, %v", s, err)
	}
}

func TestTaskPrologLinesRefuses(t *testing.T) {
	for _, v := range []Var{
		{Name: "NCCL_X", Value: "a\nexport LD_PRELOAD=/tmp/x.so"},
		{Name: "NCCL_Y", Value: "a\x00b"},
		{Name: "A=B", Value: "1"},
		{Name: "", Value: "1"},
		{Name: "1X", Value: "1"},
		{Name: "X Y", Value: "1"},
	} {
		s, err := TaskPrologLines([]Var{{Name: "OK", Value: "1"}, v})
		if err == nil || s != "" {
			t.Errorf("%+v: got %q, %v; want an error", v, s, err)
			continue
		}
		if !strings.Contains(err.Error(), v.Name) && v.Name != "" {
			t.Errorf("%+v: error %q does not name the variable", v, err)
		}
	}
}
