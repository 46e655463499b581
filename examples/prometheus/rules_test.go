package prometheus

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// promtool check rules accepts the rules file (syntax, PromQL, templates).
func TestRulesCheck(t *testing.T) {
	promtool := need(t, "promtool")
	out, err := exec.Command(promtool, "check", "rules", rulesFile).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules %s: %v\n%s", rulesFile, err, out)
	}
}

// promtool test rules passes the unit tests: every alert firing and not
// firing, the recording rules' values.
func TestRulesUnit(t *testing.T) {
	promtool := need(t, "promtool")
	out, err := exec.Command(promtool, "test", "rules", rulesTestFile).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules %s: %v\n%s", rulesTestFile, err, out)
	}
}

var (
	alertRE     = regexp.MustCompile(`(?m)^\s*- alert: (\S+)\s*$`)
	recordRE    = regexp.MustCompile(`(?m)^\s*- record: (\S+)\s*$`)
	ruleStartRE = regexp.MustCompile(`(?m)^\s*- (alert|record): `)
	evalRE      = regexp.MustCompile(`(?m)^\s*- eval_time: `)
	alertnameRE = regexp.MustCompile(`(?m)^\s*alertname: (\S+)\s*$`)
	exprTestRE  = regexp.MustCompile(`(?m)^\s*- expr: (.+)$`)
)

// Every alert has summary and description annotations, and the unit tests
// see it both firing and not firing; every recording rule's value is
// tested. (Read as text: the module has no YAML parser of its own.)
func TestRulesCoverage(t *testing.T) {
	rules := readFile(t, rulesFile)
	tests := readFile(t, rulesTestFile)

	starts := ruleStartRE.FindAllStringIndex(rules, -1)
	for i, s := range starts {
		end := len(rules)
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		block := rules[s[0]:end]
		if m := alertRE.FindStringSubmatch(block); m != nil {
			for _, a := range []string{"summary:", "description:"} {
				if !strings.Contains(block, a) {
					t.Errorf("%s: alert %s has no %s annotation", rulesFile, m[1], strings.TrimSuffix(a, ":"))
				}
			}
		}
	}

	firing, quiet := map[string]bool{}, map[string]bool{}
	cases := evalRE.FindAllStringIndex(tests, -1)
	for i, c := range cases {
		end := len(tests)
		if i+1 < len(cases) {
			end = cases[i+1][0]
		}
		block := tests[c[0]:end]
		m := alertnameRE.FindStringSubmatch(block)
		if m == nil {
			continue // a promql_expr_test case
		}
		if strings.Contains(block, "exp_alerts: []") {
			quiet[m[1]] = true
		} else if strings.Contains(block, "exp_labels:") {
			firing[m[1]] = true
		}
	}
	alerts := alertRE.FindAllStringSubmatch(rules, -1)
	if len(alerts) == 0 {
		t.Fatalf("%s: no alerting rules found", rulesFile)
	}
	for _, a := range alerts {
		if !firing[a[1]] {
			t.Errorf("%s: no test case where alert %s fires", rulesTestFile, a[1])
		}
		if !quiet[a[1]] {
			t.Errorf("%s: no test case where alert %s does not fire", rulesTestFile, a[1])
		}
	}

	var exprs []string
	for _, m := range exprTestRE.FindAllStringSubmatch(tests, -1) {
		exprs = append(exprs, m[1])
	}
	for _, r := range recordRE.FindAllStringSubmatch(rules, -1) {
		tested := false
		for _, e := range exprs {
			tested = tested || strings.Contains(e, r[1])
		}
		if !tested {
			t.Errorf("%s: no promql_expr_test queries recording rule %s", rulesTestFile, r[1])
		}
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	seriesRE    = regexp.MustCompile(`(?m)^\s*- series: '(gpuprep_\w+)\{([^}]*)\}'`)
	slurmNodeRE = regexp.MustCompile(`slurm_node="([^"]*)"`)
	hostnameRE  = regexp.MustCompile(`Hostname="([^"]*)"`)
)

// The unit tests' gpuprep series name their node as gpuprep writes them:
// by its Slurm name and its host name, which differ, so an alert that
// tells the admin to run scontrol with the host name fails its test.
func TestRulesTestsNodeNames(t *testing.T) {
	tests := readFile(t, rulesTestFile)
	all := seriesRE.FindAllStringSubmatch(tests, -1)
	if len(all) < 50 {
		t.Fatalf("%s: %d gpuprep input series", rulesTestFile, len(all))
	}
	for _, m := range all {
		node, host := slurmNodeRE.FindStringSubmatch(m[2]), hostnameRE.FindStringSubmatch(m[2])
		if node == nil || host == nil || node[1] == "" || node[1] == host[1] {
			t.Errorf("%s: %s{%s}: want slurm_node and Hostname, different", rulesTestFile, m[1], m[2])
		}
	}
}
