package nvmlgpu

import (
	"reflect"
	"testing"
)

func links(kind linkKind, bus string, n int) []linkEnd {
	out := make([]linkEnd, n)
	for i := range out {
		out[i] = linkEnd{Kind: kind, BusID: bus}
	}
	return out
}

func cat(parts ...[]linkEnd) []linkEnd {
	var out []linkEnd
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestCountNVLinks(t *testing.T) {
	a, b, c, d := "0000:07:00.0", "0000:0f:00.0", "0000:47:00.0", "0000:4e:00.0"
	for _, tc := range []struct {
		name string
		bus  []string
		ends [][]linkEnd
		want [][]int
	}{
		{
			name: "no links",
			bus:  []string{a, b},
			ends: [][]linkEnd{nil, nil},
			want: [][]int{{-1, 0}, {0, -1}},
		},
		{
			// DGX-1-like hybrid cube mesh piece: direct point-to-point links.
			name: "direct",
			bus:  []string{a, b, c},
			ends: [][]linkEnd{
				cat(links(linkToGPU, b, 2), links(linkToGPU, c, 1)),
				cat(links(linkToGPU, a, 2)),
				cat(links(linkToGPU, a, 1)),
			},
			want: [][]int{{-1, 2, 1}, {2, -1, 0}, {1, 0, -1}},
		},
		{
			// HGX H100: 18 links each into NVSwitches: NV18 to every peer.
			name: "switch",
			bus:  []string{a, b, c},
			ends: [][]linkEnd{
				links(linkToSwitch, "", 18), links(linkToSwitch, "", 18), links(linkToSwitch, "", 18),
			},
			want: [][]int{{-1, 18, 18}, {18, -1, 18}, {18, 18, -1}},
		},
		{
			// Unequal fabric links: min of both; a GPU without fabric links
			// reaches nobody through it.
			name: "switch uneven",
			bus:  []string{a, b, c},
			ends: [][]linkEnd{links(linkToSwitch, "", 12), links(linkToSwitch, "", 6), nil},
			want: [][]int{{-1, 6, 0}, {6, -1, 0}, {0, 0, -1}},
		},
		{
			// A far end that is no GPU of this node (the 2x H200 VM reports
			// FFFFFFFF:FF:FF.0) counts as the fabric.
			name: "unknown far end",
			bus:  []string{a, b},
			ends: [][]linkEnd{
				links(linkToGPU, "ffffffff:ff:ff.0", 18), links(linkToGPU, "ffffffff:ff:ff.0", 18),
			},
			want: [][]int{{-1, 18}, {18, -1}},
		},
		{
			// Direct links plus a fabric; CPU links and loops are not counted.
			name: "mixed",
			bus:  []string{a, b, c, d},
			ends: [][]linkEnd{
				cat(links(linkToGPU, b, 4), links(linkToSwitch, "", 6), links(linkToCPU, "", 2)),
				cat(links(linkToGPU, a, 4), links(linkToSwitch, "", 6)),
				cat(links(linkToSwitch, "", 3), links(linkToGPU, c, 1)),
				nil,
			},
			want: [][]int{{-1, 10, 3, 0}, {10, -1, 3, 0}, {3, 3, -1, 0}, {0, 0, 0, -1}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := countNVLinks(tc.bus, tc.ends)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}
