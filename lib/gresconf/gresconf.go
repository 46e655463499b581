// Package gresconf is Slurm's gres.conf: its model (gresconf.go), a
// parser (lex.go: comments, continuations and escapes; parse.go: the
// lines and their keys; values.go: each key's values) and a writer
// (write.go) whose output the parser reads back the same. gpuprep-gres
// writes and checks gres.conf with it (lib/gresgen), and the hooks read
// which GPUs SLURM_JOB_GPUS names from its File= order (lib/hook).
//
// The rules follow Slurm 22.05 (src/common/parse_config.c,
// src/common/gres.c and gres.conf(5)); hostlists are lib/slurm's. Where
// this package is stricter than Slurm, the doc comment says so. Nothing
// here panics on any input: every error is one line naming the file and
// line.
package gresconf

import (
	"fmt"
	"strings"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/slurm"
)

// Conf is a parsed gres.conf.
type Conf struct {
	// File is the name given to Parse, used in messages.
	File string
	// AutoDetect is the global AutoDetect= (a line of its own), lower case:
	// "off", "nvml", "rsmi", "oneapi", "nrt", "nvidia"; "" when absent.
	AutoDetect string
	// Lines are the Name= and NodeName= lines in file order.
	Lines []Line
	// Warnings are things Slurm accepts but that are probably not meant
	// (CPUs= for Cores=, a key given twice, a continuation at end of file).
	Warnings []ParseError
}

// Line is one logical line of gres.conf that starts with Name= or
// NodeName=. Values are as written, except that File= and MultipleFiles=
// are expanded and Count is the effective count.
type Line struct {
	LineNo int // first physical line (after continuations are joined)

	// NodeName is the NodeName= hostlist expression; "" for a line that
	// applies to every node.
	NodeName string
	// AutoDetect is a node-local AutoDetect= (NodeName= lines only), lower
	// case; "" when absent.
	AutoDetect string

	Name string // Name=: "gpu", "mps", "shard", "nic", ...; "" on a NodeName= line that only sets AutoDetect
	Type string // Type=

	// Files is File= (or Files=) expanded: one device per file.
	Files []string
	// MultipleFiles is MultipleFiles= expanded: all of them one device (MIG).
	MultipleFiles []string

	// Cores is Cores= (or the deprecated CPUs=): Slurm's abstract core ids
	// (slurmd's numbering, see lib/topo), not OS CPU ids. HasCores says it was given.
	Cores    cpuset.Set
	HasCores bool

	// Links is Links= (or Link=): NVLink counts to each device in PCI bus
	// order, -1 for the device itself. Nil when absent.
	Links []int

	// Count is Count= with its K/M/G/T/P suffix applied, or the default:
	// the number of Files, 1 for MultipleFiles, else 1. HasCount says
	// Count= was written.
	Count    uint64
	HasCount bool

	Flags []string // Flags=, split at commas, as written
}

// Device is one GRES record on one node: what a line means once File=
// ranges are split into one record per file.
type Device struct {
	Name, Type string
	// File is the device file; "" for a MultipleFiles device or a line
	// without files.
	File string
	// MultipleFiles are a MIG device's files: the parent GPU's
	// /dev/nvidia<minor> and the GI and CI /dev/nvidia-caps/nvidia-cap<N>.
	MultipleFiles []string
	Cores         cpuset.Set
	HasCores      bool
	Links         []int
	// Count is 1 for a device with files (for mps and shard lines, the
	// line's Count split evenly over its files); a line without files
	// gives one record carrying the whole Count.
	Count uint64
	Flags []string
	// Line is the gres.conf line it came from; 0 for generated devices.
	Line int
}

// DeviceFiles lists the device's files: File, or MultipleFiles.
func (d Device) DeviceFiles() []string {
	if d.File != "" {
		return []string{d.File}
	}
	return d.MultipleFiles
}

// IsShared says whether a GRES name is one Slurm shares a GPU for (mps,
// shard): its Count is not tied to the number of files.
func IsShared(name string) bool {
	return strings.EqualFold(name, "mps") || strings.EqualFold(name, "shard")
}

// AppliesTo says whether the line is for the node named host: a line without
// NodeName= applies to every node.
func (l Line) AppliesTo(host string) bool {
	if l.NodeName == "" {
		return true
	}
	h, err := slurm.ParseHostlist(l.NodeName)
	return err == nil && h.Contains(host)
}

// ForNode lists the GRES records gres.conf gives the node named host, in
// file order, one per device file. Lines that only set AutoDetect give none.
//
// Slurm itself collects global Name= lines before NodeName= lines and
// then sorts GPUs by File and by the position of -1 in Links (PCI order);
// callers that compare with slurmd -G should match by File, not position.
func (g *Conf) ForNode(host string) []Device {
	var out []Device
	for _, l := range g.Lines {
		if l.Name == "" || !l.AppliesTo(host) {
			continue
		}
		out = append(out, l.Devices()...)
	}
	return out
}

// NodeNames lists the distinct NodeName= values of the file's lines, as
// written, in file order.
func (g *Conf) NodeNames() []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range g.Lines {
		if l.NodeName != "" && !seen[l.NodeName] {
			seen[l.NodeName] = true
			out = append(out, l.NodeName)
		}
	}
	return out
}

// Names says whether any line is for the node named host: a line without
// NodeName=, or one whose NodeName= host list contains host.
func (g *Conf) Names(host string) bool {
	for _, l := range g.Lines {
		if l.AppliesTo(host) {
			return true
		}
	}
	return false
}

// Devices expands the line into its records regardless of NodeName.
func (l Line) Devices() []Device {
	base := Device{
		Name: l.Name, Type: l.Type,
		Cores: l.Cores, HasCores: l.HasCores,
		Links: cloneInts(l.Links), Count: l.Count,
		Flags: cloneStrings(l.Flags), Line: l.LineNo,
	}
	switch {
	case len(l.MultipleFiles) > 0:
		d := base
		d.MultipleFiles = cloneStrings(l.MultipleFiles)
		if !IsShared(l.Name) {
			d.Count = 1
		}
		return []Device{d}
	case len(l.Files) > 0:
		out := make([]Device, 0, len(l.Files))
		per := uint64(1)
		if IsShared(l.Name) {
			per = l.Count / uint64(len(l.Files))
		}
		for _, f := range l.Files {
			d := base
			d.File = f
			d.Count = per
			d.Links = cloneInts(l.Links)
			d.Flags = cloneStrings(l.Flags)
			out = append(out, d)
		}
		return out
	default:
		return []Device{base}
	}
}

// AutoDetectFor is the AutoDetect mode in force on host: a node-local
// AutoDetect= on a NodeName= line that matches host wins over the global
// one; "" when neither is set. As in Slurm, two node-local values for the
// same node that differ are an error.
func (g *Conf) AutoDetectFor(host string) (string, error) {
	local, at := "", 0
	for _, l := range g.Lines {
		if l.AutoDetect == "" || l.NodeName == "" || !l.AppliesTo(host) {
			continue
		}
		if local != "" && l.AutoDetect != local {
			return "", ParseError{File: g.File, Line: l.LineNo,
				Msg: fmt.Sprintf("AutoDetect=%s for %s differs from AutoDetect=%s on line %d", l.AutoDetect, host, local, at)}
		}
		if local == "" {
			local, at = l.AutoDetect, l.LineNo
		}
	}
	if local != "" {
		return local, nil
	}
	return g.AutoDetect, nil
}

func cloneInts(s []int) []int {
	if s == nil {
		return nil
	}
	return append([]int(nil), s...)
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s...)
}
