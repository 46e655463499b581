package srunwrapcmd

import "strings"

// envList is the environment the command gets: the task's, with
// srunwrap's changes, in the original order (a new variable at the end).
type envList struct {
	vars  []string
	index map[string]int
}

func newEnvList(environ []string) *envList {
	l := &envList{index: make(map[string]int, len(environ))}
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if i, dup := l.index[name]; dup {
			l.vars[i] = kv // the last one wins, as getenv would see it
			continue
		}
		l.index[name] = len(l.vars)
		l.vars = append(l.vars, kv)
	}
	return l
}

// get is getenv over the list.
func (l *envList) get(name string) string {
	if i, ok := l.index[name]; ok {
		_, v, _ := strings.Cut(l.vars[i], "=")
		return v
	}
	return ""
}

func (l *envList) set(name, value string) {
	kv := name + "=" + value
	if i, ok := l.index[name]; ok {
		l.vars[i] = kv
		return
	}
	l.index[name] = len(l.vars)
	l.vars = append(l.vars, kv)
}

func (l *envList) list() []string { return l.vars }
