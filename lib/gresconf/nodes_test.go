package gresconf

import (
	"slices"
	"testing"
)

func TestGresConfNodeNames(t *testing.T) {
	g, err := Parse("g.conf", []byte("NodeName=a.x Name=gpu File=/dev/nvidia0\nNodeName=b[1-3] Name=gpu File=/dev/nvidia0\nNodeName=a.x Name=mps Count=10\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := g.NodeNames(); !slices.Equal(got, []string{"a.x", "b[1-3]"}) {
		t.Errorf("NodeNames %v", got)
	}
	if !g.Names("b2") || !g.Names("a.x") || g.Names("a") || g.Names("b4") {
		t.Error("Names")
	}
	all, _ := Parse("g.conf", []byte("Name=gpu File=/dev/nvidia0\n"))
	if !all.Names("anything") || len(all.NodeNames()) != 0 {
		t.Error("a line without NodeName= is for every node")
	}
}
