package drift

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// CompactNodes writes node names the way Slurm does: "gpu[01-04,07],login1".
// Names are grouped by the text before their trailing number and by that
// number's width, so "gpu01" and "gpu1" never merge. An empty name is "?".
func CompactNodes(names []string) string {
	type key struct {
		prefix string
		width  int
	}
	groups := map[key][]uint64{}
	var plain []string
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" {
			n = "?"
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		i := len(n)
		for i > 0 && n[i-1] >= '0' && n[i-1] <= '9' {
			i--
		}
		num, err := strconv.ParseUint(n[i:], 10, 64)
		if i == len(n) || len(n)-i > 18 || err != nil {
			plain = append(plain, n)
			continue
		}
		k := key{n[:i], len(n) - i}
		groups[k] = append(groups[k], num)
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].prefix != keys[b].prefix {
			return keys[a].prefix < keys[b].prefix
		}
		return keys[a].width < keys[b].width
	})
	var out []string
	for _, k := range keys {
		nums := groups[k]
		sort.Slice(nums, func(a, b int) bool { return nums[a] < nums[b] })
		if len(nums) == 1 {
			out = append(out, fmt.Sprintf("%s%0*d", k.prefix, k.width, nums[0]))
			continue
		}
		var ranges []string
		for i := 0; i < len(nums); {
			j := i
			for j+1 < len(nums) && nums[j+1] == nums[j]+1 {
				j++
			}
			r := fmt.Sprintf("%0*d", k.width, nums[i])
			if j > i {
				r += fmt.Sprintf("-%0*d", k.width, nums[j])
			}
			ranges = append(ranges, r)
			i = j + 1
		}
		out = append(out, k.prefix+"["+strings.Join(ranges, ",")+"]")
	}
	sort.Strings(plain)
	return strings.Join(append(out, plain...), ",")
}
