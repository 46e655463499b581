package prometheus

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// dashboard is the part of gpuprep-dashboard.json the tests read.
type dashboard struct {
	SchemaVersion int `json:"schemaVersion"`
	Inputs        []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		PluginID string `json:"pluginId"`
	} `json:"__inputs"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type variable struct {
	Name       string      `json:"name"`
	Type       string      `json:"type"`
	Query      any         `json:"query"` // a string, or {"query": ...}
	Definition string      `json:"definition"`
	Datasource *datasource `json:"datasource"`
}

type panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *datasource `json:"datasource"`
	Targets    []target    `json:"targets"`
	Panels     []panel     `json:"panels"` // a collapsed row's
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type target struct {
	RefID      string      `json:"refId"`
	Expr       string      `json:"expr"`
	Datasource *datasource `json:"datasource"`
}

const dsUID = "${DS_PROMETHEUS}"

// loadDashboard parses gpuprep-dashboard.json.
func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// allPanels is every panel but rows, those inside collapsed rows included.
func (d dashboard) allPanels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			out = append(out, p)
		}
	}
	walk(d.Panels)
	return out
}

// variableQuery is a query variable's label_values(SELECTOR, LABEL)
// selector, the PromQL part of it ("" for another kind of query).
var labelValuesRE = regexp.MustCompile(`^label_values\((.+),\s*\w+\)$`)

func (v variable) selector() string {
	q := v.Definition
	switch x := v.Query.(type) {
	case string:
		q = x
	case map[string]any:
		if s, ok := x["query"].(string); ok {
			q = s
		}
	}
	if m := labelValuesRE.FindStringSubmatch(strings.TrimSpace(q)); m != nil {
		return m[1]
	}
	return ""
}

// substitutions are what the template variables become for a query run
// outside Grafana: every node, one-minute windows.
var substitutions = map[string]string{
	"instance":        ".*",
	"slurm_node":      ".*",
	"__rate_interval": "1m",
	"__interval":      "1m",
	"__range":         "1m",
}

var varRE = regexp.MustCompile(`\$\{?(\w+)\}?`)

// expand replaces the dashboard's variables in expr; an unknown one is an
// error naming it.
func expand(expr string) (string, error) {
	var unknown []string
	out := varRE.ReplaceAllStringFunc(expr, func(m string) string {
		name := varRE.FindStringSubmatch(m)[1]
		v, ok := substitutions[name]
		if !ok {
			unknown = append(unknown, m)
			return m
		}
		return v
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("unknown variables %v", unknown)
	}
	return out, nil
}

// The dashboard parses, takes its data source from the DS_PROMETHEUS
// input/variable, has the instance and Hostname variables, and every panel
// has a data source and targets with an expression whose variables are
// the dashboard's.
func TestDashboard(t *testing.T) {
	d := loadDashboard(t)
	if d.SchemaVersion < 36 {
		t.Errorf("%s: schemaVersion %d, want 36 or later (Grafana 9+)", dashboardFile, d.SchemaVersion)
	}
	hasInput := false
	for _, in := range d.Inputs {
		hasInput = hasInput || (in.Name == "DS_PROMETHEUS" && in.Type == "datasource" && in.PluginID == "prometheus")
	}
	if !hasInput {
		t.Errorf("%s: no __inputs entry DS_PROMETHEUS (datasource, prometheus)", dashboardFile)
	}
	vars := map[string]variable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if v, ok := vars["DS_PROMETHEUS"]; !ok || v.Type != "datasource" {
		t.Errorf("%s: no datasource variable DS_PROMETHEUS", dashboardFile)
	}
	for _, name := range []string{"instance", "slurm_node"} {
		v, ok := vars[name]
		switch {
		case !ok:
			t.Errorf("%s: no template variable %s", dashboardFile, name)
		case v.Datasource == nil || v.Datasource.UID != dsUID:
			t.Errorf("%s: variable %s: datasource uid is not %s", dashboardFile, name, dsUID)
		case v.selector() == "":
			t.Errorf("%s: variable %s: query is not label_values(SELECTOR, LABEL)", dashboardFile, name)
		}
	}
	panels := d.allPanels()
	if len(panels) == 0 {
		t.Fatalf("%s: no panels", dashboardFile)
	}
	ids := map[int]string{}
	for _, p := range panels {
		where := fmt.Sprintf("%s: panel %d %q", dashboardFile, p.ID, p.Title)
		if other, dup := ids[p.ID]; dup {
			t.Errorf("%s: id also used by %q", where, other)
		}
		ids[p.ID] = p.Title
		if p.Datasource == nil || p.Datasource.UID != dsUID {
			t.Errorf("%s: datasource uid is not %s", where, dsUID)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no targets", where)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("%s: target %s has no expr", where, tg.RefID)
			}
			if tg.Datasource != nil && tg.Datasource.UID != dsUID {
				t.Errorf("%s: target %s: datasource uid %q is not %s", where, tg.RefID, tg.Datasource.UID, dsUID)
			}
			if _, err := expand(tg.Expr); err != nil {
				t.Errorf("%s: target %s: %v", where, tg.RefID, err)
			}
		}
	}
}
