package drift

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// parseProm checks text against the Prometheus text exposition format
// (0.0.4) line by line, the way node_exporter's textfile collector would
// reject a file, and returns the samples as "name{labels}" -> value.
// Checked: every line ends in "\n"; HELP/TYPE syntax, at most one of each per
// family, TYPE before the family's samples; metric and label names; label
// values' escapes (only \\, \", \n); values; a family's samples contiguous;
// no duplicate series; counters not negative.
func parseProm(text string) (map[string]float64, error) {
	if text != "" && !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("does not end in a newline")
	}
	nameRE := regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelRE := regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	types, helps := map[string]string{}, map[string]bool{}
	done := map[string]bool{} // families whose samples have ended
	samples := map[string]float64{}
	last := ""
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		n := i + 1
		if strings.HasPrefix(line, "#") {
			f := strings.SplitN(line, " ", 4)
			if len(f) < 3 || f[0] != "#" || (f[1] != "HELP" && f[1] != "TYPE") {
				continue // a plain comment
			}
			name := f[2]
			if !nameRE.MatchString(name) {
				return nil, fmt.Errorf("line %d: bad metric name %q", n, name)
			}
			switch f[1] {
			case "HELP":
				if helps[name] {
					return nil, fmt.Errorf("line %d: second HELP for %s", n, name)
				}
				helps[name] = true
				if len(f) == 4 {
					if err := checkEscapes(f[3], false); err != nil {
						return nil, fmt.Errorf("line %d: HELP: %v", n, err)
					}
				}
			case "TYPE":
				if _, dup := types[name]; dup {
					return nil, fmt.Errorf("line %d: second TYPE for %s", n, name)
				}
				if done[name] || last == name {
					return nil, fmt.Errorf("line %d: TYPE for %s after its samples", n, name)
				}
				if len(f) != 4 || !map[string]bool{"counter": true, "gauge": true, "histogram": true, "summary": true, "untyped": true}[f[3]] {
					return nil, fmt.Errorf("line %d: bad TYPE line %q", n, line)
				}
				types[name] = f[3]
			}
			continue
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, labels, rest, err := splitSample(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v: %q", n, err, line)
		}
		if !nameRE.MatchString(name) {
			return nil, fmt.Errorf("line %d: bad metric name %q", n, name)
		}
		var keys []string
		for _, l := range labels {
			if !labelRE.MatchString(l[0]) || strings.HasPrefix(l[0], "__") {
				return nil, fmt.Errorf("line %d: bad label name %q", n, l[0])
			}
			keys = append(keys, l[0]+"="+strconv.Quote(l[1]))
		}
		sort.Strings(keys)
		for j := 1; j < len(keys); j++ {
			if strings.SplitN(keys[j], "=", 2)[0] == strings.SplitN(keys[j-1], "=", 2)[0] {
				return nil, fmt.Errorf("line %d: label repeated", n)
			}
		}
		fields := strings.Fields(rest)
		if len(fields) < 1 || len(fields) > 2 {
			return nil, fmt.Errorf("line %d: want a value and an optional timestamp: %q", n, rest)
		}
		v, err := parseValue(fields[0])
		if err != nil {
			return nil, fmt.Errorf("line %d: value %q: %v", n, fields[0], err)
		}
		if len(fields) == 2 {
			if _, err := strconv.ParseInt(fields[1], 10, 64); err != nil {
				return nil, fmt.Errorf("line %d: timestamp %q", n, fields[1])
			}
		}
		if done[name] {
			return nil, fmt.Errorf("line %d: samples of %s are not contiguous", n, name)
		}
		if last != "" && last != name {
			done[last] = true
		}
		last = name
		if types[name] == "counter" && v < 0 {
			return nil, fmt.Errorf("line %d: negative counter", n)
		}
		series := name + "{" + strings.Join(keys, ",") + "}"
		if _, dup := samples[series]; dup {
			return nil, fmt.Errorf("line %d: duplicate series %s", n, series)
		}
		samples[series] = v
	}
	return samples, nil
}

// splitSample splits `name{a="x",b="y"} rest`.
func splitSample(line string) (name string, labels [][2]string, rest string, err error) {
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return "", nil, "", fmt.Errorf("no value")
	}
	name, s := line[:i], line[i:]
	if s[0] == ' ' {
		return name, nil, s[1:], nil
	}
	s = s[1:]
	for {
		if strings.HasPrefix(s, "}") {
			break
		}
		eq := strings.Index(s, `="`)
		if eq <= 0 {
			return "", nil, "", fmt.Errorf("bad label")
		}
		key := s[:eq]
		s = s[eq+2:]
		var val strings.Builder
		for {
			if s == "" {
				return "", nil, "", fmt.Errorf("unterminated label value")
			}
			c := s[0]
			if c == '"' {
				s = s[1:]
				break
			}
			if c == '\n' {
				return "", nil, "", fmt.Errorf("raw newline in label value")
			}
			if c == '\\' {
				if len(s) < 2 || !strings.ContainsRune(`\"n`, rune(s[1])) {
					return "", nil, "", fmt.Errorf("bad escape in label value")
				}
				val.WriteByte(map[byte]byte{'\\': '\\', '"': '"', 'n': '\n'}[s[1]])
				s = s[2:]
				continue
			}
			val.WriteByte(c)
			s = s[1:]
		}
		labels = append(labels, [2]string{key, val.String()})
		if strings.HasPrefix(s, ",") {
			s = s[1:]
		}
	}
	if !strings.HasPrefix(s, "} ") {
		return "", nil, "", fmt.Errorf("no space after labels")
	}
	return name, labels, s[2:], nil
}

// checkEscapes allows only \\ and \n (and \" in label values).
func checkEscapes(s string, quotes bool) error {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if i+1 >= len(s) || !(s[i+1] == '\\' || s[i+1] == 'n' || quotes && s[i+1] == '"') {
			return fmt.Errorf("bad escape at %d", i)
		}
		i++
	}
	return nil
}

func parseValue(s string) (float64, error) {
	switch s {
	case "+Inf", "-Inf", "NaN":
		return strconv.ParseFloat(s, 64)
	}
	if strings.ContainsAny(s, "xXpP_") || strings.EqualFold(s, "inf") {
		return 0, fmt.Errorf("not a Go-style float")
	}
	return strconv.ParseFloat(s, 64)
}
