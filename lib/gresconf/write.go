package gresconf

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"gpuprep/lib/slurm"
	"gpuprep/lib/textfmt"
)

// Format writes a gres.conf: each header line as a "# " comment,
// then "AutoDetect=<autoDetect>" (left out when autoDetect is ""), then one
// line per device in the order given:
//
//	Name=gpu Type=h100 File=/dev/nvidia2 Cores=0-55 Links=-1,18,18,18
//	Name=gpu Type=a100_3g.20gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap21,/dev/nvidia-caps/nvidia-cap22 Cores=0-31
//
// Cores=, Links=, Count= and Flags= appear only when set (Count= only when
// it differs from what Slurm would assume). It checks every device first
// and writes nothing if one cannot be written so that Parse reads
// it back the same (an empty Name, a relative path, a path with '[', ']',
// ',' or white space, Links= on a device with several files, HasCores with
// no cores). Parse(Format(devs)).ForNode(any) == devs.
func Format(w io.Writer, header []string, autoDetect string, devs []Device) error {
	return formatGresConf(w, header, autoDetect, "", devs)
}

// FormatFor is Format for a gres.conf that several nodes
// share (a common file, or configless Slurm, where slurmctld serves one
// gres.conf to every node): every line starts with NodeName=<node>, the
// AutoDetect= line too ("NodeName=<node> AutoDetect=off", which sets it for
// those nodes only), so the files of several nodes can be concatenated.
// node is a host name or a hostlist expression ("gpu[01-04]").
func FormatFor(w io.Writer, header []string, autoDetect, node string, devs []Device) error {
	if node == "" || strings.ContainsAny(node, "#\\\"= \t\r\n\v\f\x00") {
		return fmt.Errorf("NodeName %s: want a host name or hostlist expression", slurm.Quote(node))
	}
	if _, err := slurm.ParseHostlist(node); err != nil {
		return fmt.Errorf("NodeName %s: %v", slurm.Quote(node), err)
	}
	return formatGresConf(w, header, autoDetect, node, devs)
}

func formatGresConf(w io.Writer, header []string, autoDetect, node string, devs []Device) error {
	if autoDetect != "" {
		if _, err := parseAutoDetect(autoDetect); err != "" {
			return errors.New(err)
		}
	}
	for i, d := range devs {
		if err := checkWritable(d); err != nil {
			return fmt.Errorf("gres device %d (%s %s): %w", i, d.Name, d.Type, err)
		}
	}
	bw := bufio.NewWriter(w)
	for _, h := range header {
		for _, l := range strings.Split(h, "\n") {
			l = strings.TrimRight(l, "\r")
			if l == "" {
				bw.WriteString("#\n")
			} else {
				bw.WriteString("# " + l + "\n")
			}
		}
	}
	prefix := ""
	if node != "" {
		prefix = "NodeName=" + node + " "
	}
	if autoDetect != "" {
		bw.WriteString(prefix + "AutoDetect=" + strings.ToLower(autoDetect) + "\n")
	}
	for _, d := range devs {
		bw.WriteString(prefix + formatDevice(d))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// formatDevice renders one device as a gres.conf line.
func formatDevice(d Device) string {
	var b strings.Builder
	b.WriteString("Name=" + confValue(d.Name))
	if d.Type != "" {
		b.WriteString(" Type=" + confValue(d.Type))
	}
	if d.File != "" {
		b.WriteString(" File=" + d.File)
	}
	if len(d.MultipleFiles) > 0 {
		b.WriteString(" MultipleFiles=" + strings.Join(d.MultipleFiles, ","))
	}
	if d.HasCores {
		b.WriteString(" Cores=" + d.Cores.String())
	}
	if d.Links != nil {
		s := make([]string, len(d.Links))
		for i, n := range d.Links {
			s[i] = strconv.Itoa(n)
		}
		b.WriteString(" Links=" + strings.Join(s, ","))
	}
	if d.Count != 1 {
		b.WriteString(" Count=" + strconv.FormatUint(d.Count, 10))
	}
	if len(d.Flags) > 0 {
		b.WriteString(" Flags=" + confValue(strings.Join(d.Flags, ",")))
	}
	return b.String()
}

// confValue escapes a free-text value: backslashes and '#' get a
// backslash, and a value with white space (or empty) is quoted.
func confValue(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, "#", `\#`)
	if s == "" || strings.IndexFunc(s, isSpaceRune) >= 0 || strings.HasPrefix(s, `"`) {
		return `"` + s + `"`
	}
	return s
}

// checkWritable says why a device would not read back the same.
func checkWritable(d Device) error {
	if d.Name == "" {
		return errors.New("empty Name")
	}
	for _, s := range append([]string{d.Name, d.Type}, d.Flags...) {
		if strings.ContainsAny(s, "\"\n\x00") {
			return fmt.Errorf("value %s holds a quote, newline or NUL", slurm.Quote(s))
		}
	}
	for _, f := range d.Flags {
		if f == "" || strings.ContainsAny(f, ", \t\r\v\f") {
			return fmt.Errorf("flag %s is empty or holds a comma or white space", slurm.Quote(f))
		}
		if !gresFlags[strings.ToLower(f)] {
			return fmt.Errorf("unknown flag %s", slurm.Quote(f))
		}
	}
	if d.File != "" && len(d.MultipleFiles) > 0 {
		return errors.New("both File and MultipleFiles")
	}
	if len(d.MultipleFiles) == 1 {
		return errors.New("MultipleFiles with one file; use File")
	}
	for _, f := range d.DeviceFiles() {
		if !strings.HasPrefix(f, "/") || strings.ContainsAny(f, "[],#\\\" \t\r\n\v\f\x00") {
			return fmt.Errorf("file %s is not an absolute path of plain characters", slurm.Quote(f))
		}
	}
	if d.HasCores && d.Cores.IsEmpty() {
		return errors.New("HasCores with an empty core set")
	}
	if !d.HasCores && !d.Cores.IsEmpty() {
		return errors.New("Cores set but HasCores false")
	}
	if d.Links != nil {
		if _, err := parseLinks(textfmt.JoinInts(d.Links, ",")); err != "" {
			return fmt.Errorf("Links %v: %s", d.Links, err)
		}
		if d.File == "" && len(d.MultipleFiles) == 0 && d.Count > 1 && !IsShared(d.Name) {
			return errors.New("Links on a record of several devices")
		}
	}
	if d.Count != 1 && !IsShared(d.Name) && (d.File != "" || len(d.MultipleFiles) > 0) {
		return fmt.Errorf("Count=%d on a device with files", d.Count)
	}
	if d.Count >= 1<<64-2 {
		return fmt.Errorf("Count=%d is too large", d.Count)
	}
	if _, _, err := parseFlags(strings.Join(d.Flags, ",")); err != "" {
		return errors.New(err)
	}
	return nil
}
