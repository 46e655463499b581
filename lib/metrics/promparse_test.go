package metrics

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// parseProm parses text with Prometheus's own text-format (0.0.4) parser,
// the one node_exporter's textfile collector reads a .prom file with
// (expfmt.NewTextParser(model.LegacyValidation)), and returns the samples
// as "name{labels}" -> value, labels sorted by name, values quoted as Go
// strings. The parser alone rejects: a last line without "\n", bad metric
// or label names, a label repeated in one sample, bad escapes or a raw
// newline in a label value or HELP text, a value or timestamp that is not
// a number, an unknown TYPE, a second HELP or TYPE for a family, and a
// TYPE after the family's samples. The checks after it are ones
// node_exporter makes past the parser (each says why).
func parseProm(text string) (map[string]float64, error) {
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, err
	}
	samples := map[string]float64{}
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			// The parser accepts a timestamp; node_exporter's textfile
			// collector (hasTimestamps) then skips the whole file.
			if m.TimestampMs != nil {
				return nil, fmt.Errorf("%s: client-side timestamp, node_exporter skips the file", name)
			}
			var keys []string
			for _, l := range m.GetLabel() {
				// LegacyValidation allows a leading "__"; node_exporter
				// hands the labels to client_golang's NewDesc, which
				// refuses reserved names and fails the scrape.
				if strings.HasPrefix(l.GetName(), model.ReservedLabelPrefix) {
					return nil, fmt.Errorf("%s: reserved label name %q", name, l.GetName())
				}
				if v, ok := nodeLabel(l.GetName()); ok {
					// Every sample names the node; the tests' keys
					// leave the names out.
					if l.GetValue() != v {
						return nil, fmt.Errorf("%s: %s=%q, want %q", name, l.GetName(), l.GetValue(), v)
					}
					continue
				}
				keys = append(keys, l.GetName()+"="+strconv.Quote(l.GetValue()))
			}
			sort.Strings(keys)
			series := name + "{" + strings.Join(keys, ",") + "}"
			// The parser keeps both samples of a repeated series (its doc:
			// "checks for duplicates have to be performed separately");
			// node_exporter's registry drops the second one with an error.
			if _, dup := samples[series]; dup {
				return nil, fmt.Errorf("duplicate series %s", series)
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				samples[series] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				samples[series] = m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				samples[series] = m.GetUntyped().GetValue()
			default:
				// Not a validity check: Format writes no histograms or
				// summaries, so this helper does not flatten them.
				return nil, fmt.Errorf("%s: %v not flattened by parseProm", name, mf.GetType())
			}
		}
	}
	return samples, nil
}

// nodeLabel is the value testNode gives the label name, when it is one of
// the node's labels.
func nodeLabel(name string) (string, bool) {
	switch name {
	case "Hostname":
		return testNode.Hostname, true
	case "slurm_node":
		return testNode.SlurmName, true
	}
	return "", false
}

// Every sample of every writer names the node twice: its host name (the
// join with dcgm-exporter) and its Slurm name (what scontrol takes),
// which differ here.
func TestEverySampleNamesTheNode(t *testing.T) {
	m := testMetrics()
	m.Probe = testProbe()
	m.JobGPUs = testJobGPUs().JobGPUs
	for _, hook := range []string{HookProlog, HookEpilog, HookHealth} {
		parser := expfmt.NewTextParser(model.LegacyValidation)
		families, err := parser.TextToMetricFamilies(bytes.NewReader(Format(hook, testNode, m, Build{Version: "dev"})))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for name, mf := range families {
			for _, s := range mf.GetMetric() {
				got := map[string]string{}
				for _, l := range s.GetLabel() {
					got[l.GetName()] = l.GetValue()
				}
				if got["Hostname"] != "gpu01" || got["slurm_node"] != "node-a17" {
					t.Errorf("%s %s: Hostname %q, slurm_node %q", hook, name, got["Hostname"], got["slurm_node"])
				}
				n++
			}
		}
		if n < 10 {
			t.Errorf("%s: %d samples", hook, n)
		}
	}
}
