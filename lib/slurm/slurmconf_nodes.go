package slurm

import "strings"

// confRecord is one record line of slurm.conf (NodeName=, PartitionName=,
// ...): its pairs as written, and where it is.
type confRecord struct {
	pairs [][2]string
	where string
}

// NodeRecord is slurm.conf's NodeName= line for one node, with what the
// NodeName=DEFAULT lines before it set, as slurmctld reads it.
type NodeRecord struct {
	// Where is the line ("/etc/slurm/slurm.conf:40").
	Where string
	// values maps lower-case keys to values.
	values map[string]string
}

// Get is a key's value (case-blind) and whether the line, or a
// NodeName=DEFAULT line before it, sets it.
func (n NodeRecord) Get(key string) (string, bool) {
	v, ok := n.values[strings.ToLower(key)]
	return v, ok
}

// Node finds the NodeName= line for node: the first whose host list
// ("gpu[01-16]") names it. NodeName=DEFAULT lines are not nodes; their
// values count for the lines after them. A host list that does not parse
// names no node.
func (c *Conf) Node(node string) (NodeRecord, bool) {
	if c == nil {
		return NodeRecord{}, false
	}
	defaults := map[string]string{}
	for _, rec := range c.records {
		if !strings.EqualFold(rec.pairs[0][0], "NodeName") {
			continue
		}
		names := rec.pairs[0][1]
		if strings.EqualFold(names, "DEFAULT") {
			for _, p := range rec.pairs[1:] {
				defaults[strings.ToLower(p[0])] = p[1]
			}
			continue
		}
		hl, err := ParseHostlist(names)
		if err != nil || !hl.Contains(node) {
			continue
		}
		values := make(map[string]string, len(defaults)+len(rec.pairs))
		for k, v := range defaults {
			values[k] = v
		}
		for _, p := range rec.pairs {
			values[strings.ToLower(p[0])] = p[1]
		}
		return NodeRecord{Where: rec.where, values: values}, true
	}
	return NodeRecord{}, false
}

// NodeNameFor is the NodeName slurmd takes on the host hostname when it is
// not told one (slurmd -N): the name of the NodeName= line whose
// NodeHostname= (each host of its list for the name at the same place of
// NodeName's; none set: the NodeName itself) is hostname, else its part
// before the first dot. "" when no line names the host, or a list does
// not parse.
func (c *Conf) NodeNameFor(hostname string) string {
	if c == nil || hostname == "" {
		return ""
	}
	short, _, _ := strings.Cut(hostname, ".")
	for _, h := range []string{hostname, short} {
		if name := c.nodeWithHost(h); name != "" {
			return name
		}
	}
	return ""
}

// nodeWithHost is the NodeName whose host is h, "" for none.
func (c *Conf) nodeWithHost(h string) string {
	for _, rec := range c.records {
		if !strings.EqualFold(rec.pairs[0][0], "NodeName") || strings.EqualFold(rec.pairs[0][1], "DEFAULT") {
			continue
		}
		names, err := ExpandHostlist(rec.pairs[0][1])
		if err != nil {
			continue
		}
		hosts := names
		for _, p := range rec.pairs[1:] {
			if strings.EqualFold(p[0], "NodeHostname") {
				if hosts, err = ExpandHostlist(p[1]); err != nil || len(hosts) != len(names) {
					hosts = nil
				}
			}
		}
		for i, host := range hosts {
			if host == h {
				return names[i]
			}
		}
	}
	return ""
}
