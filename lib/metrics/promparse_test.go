package metrics

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

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
