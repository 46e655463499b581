package gpu

import (
	"reflect"
	"testing"
)

// migBackend lists GPUs as a light listing does (MIG devices without
// UUIDs) and reads MIG state as NVML does (UUIDs, no cap minors).
type migBackend struct {
	devs  []Device
	read  map[int]MIGState
	calls []int
}

func (b *migBackend) Name() string               { return "test" }
func (b *migBackend) Devices() ([]Device, error) { return b.devs, nil }
func (b *migBackend) Close() error               { return nil }
func (b *migBackend) MIG(i int) (MIGState, error) {
	b.calls = append(b.calls, i)
	return b.read[i], nil
}

// FillMIGUUIDs reads only the GPUs whose MIG devices lack UUIDs, and
// keeps the listing's cap minors where the reader has none.
func TestFillMIGUUIDs(t *testing.T) {
	listed := MIGState{Current: true, Devices: []MIGDevice{{GI: 1, GICapMinor: 147, CICapMinor: 148}, {GI: 5, GICapMinor: 183, CICapMinor: 184}}}
	read := MIGState{Current: true, Devices: []MIGDevice{{GI: 1, UUID: "MIG-a", GICapMinor: -1, CICapMinor: -1}, {GI: 5, UUID: "MIG-b", GICapMinor: -1, CICapMinor: -1}}}
	b := &migBackend{read: map[int]MIGState{0: read}}
	devs := []Device{{Index: 0, MIG: listed}, {Index: 1}, {Index: 2, MIG: MIGState{Current: true, Devices: []MIGDevice{{GI: 2, UUID: "MIG-c"}}}}}
	if err := FillMIGUUIDs(b, devs); err != nil {
		t.Fatal(err)
	}
	want := []MIGDevice{{GI: 1, UUID: "MIG-a", GICapMinor: 147, CICapMinor: 148}, {GI: 5, UUID: "MIG-b", GICapMinor: 183, CICapMinor: 184}}
	if !reflect.DeepEqual(devs[0].MIG.Devices, want) || !reflect.DeepEqual(b.calls, []int{0}) {
		t.Errorf("GPU 0's MIG devices %+v (reads %v); want %+v, GPU 0 read alone", devs[0].MIG.Devices, b.calls, want)
	}
}
