package nccl

import "strings"

// HCASpec is a parsed NCCL_IB_HCA value, read the way NCCL's net_ib.cc
// and parseStringList (src/misc/utils.cc) read it:
//
//   - a leading "^" excludes the listed devices (Exclude);
//   - then a leading "=" asks for exact names (Exact); without it each
//     name is a prefix, so "mlx5_1" also selects mlx5_10..mlx5_19;
//   - then a comma-separated list of "name" or "name:port". NCCL trims
//     nothing: " mlx5_1" names a device whose name starts with a space.
//     Empty elements (",,", a lone ":1") are skipped.
type HCASpec struct {
	Exclude bool
	Exact   bool
	HCAs    []HCAPort
}

// HCAPort is one element of NCCL_IB_HCA.
type HCAPort struct {
	Name string // device name or prefix ("mlx5_0")
	// Port is the port number as NCCL reads it (atoi of what follows
	// ":"), or -1 for any port when none is given.
	Port int
	// PortText is what followed ":" up to the next ","; "" when no port
	// was given. When it is not a plain decimal number, Port is what
	// NCCL makes of it anyway (atoi: "x" is 0, "1a" is 1).
	PortText string
}

// PortOK says whether PortText is a plain decimal port number (or absent).
func (h HCAPort) PortOK() bool {
	if h.PortText == "" {
		return h.Port == -1 // "mlx5_0:" is port 0 to NCCL
	}
	for _, c := range h.PortText {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// ParseIBHCA reads an NCCL_IB_HCA value. It accepts any string, as NCCL
// does; what it makes of odd input is in HCASpec's comment.
func ParseIBHCA(s string) HCASpec {
	var spec HCASpec
	if strings.HasPrefix(s, "^") {
		spec.Exclude, s = true, s[1:]
	}
	if strings.HasPrefix(s, "=") {
		spec.Exact, s = true, s[1:]
	}
	for _, el := range strings.Split(s, ",") {
		name, port, hasPort := strings.Cut(el, ":")
		if name == "" {
			continue // NCCL: ":1" and "" add nothing
		}
		h := HCAPort{Name: name, Port: -1}
		if hasPort {
			h.PortText = port
			h.Port = int(atoi(port))
		}
		spec.HCAs = append(spec.HCAs, h)
	}
	return spec
}

// String writes spec back in NCCL's syntax.
func (s HCASpec) String() string {
	var b strings.Builder
	if s.Exclude {
		b.WriteByte('^')
	}
	if s.Exact {
		b.WriteByte('=')
	}
	for i, h := range s.HCAs {
		if i == 0 && !s.Exact && (h.Name[0] == '=' || !s.Exclude && h.Name[0] == '^') {
			b.WriteByte(',') // an empty element, skipped, keeps the name's "^" or "=" part of it
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(h.Name)
		if h.Port != -1 || h.PortText != "" {
			b.WriteByte(':')
			b.WriteString(h.PortText)
		}
	}
	return b.String()
}
