package irq

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseInterrupts: any input parses into rows with one count per CPU
// column and distinct IRQ numbers in range, or fails with an error naming
// /proc/interrupts; it never panics. What it parses, ParseIRQNumbers
// lists alike.
func FuzzParseInterrupts(f *testing.F) {
	files, err := filepath.Glob("testdata/interrupts-*.txt")
	if err != nil || len(files) == 0 {
		f.Fatalf("no samples: %v", err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"", "CPU0\n", "   CPU0 CPU1\n  0: 1 2 IO-APIC 2-edge timer\nNMI: 0 0 x\n",
		"  CPU0\n 5: 1 XT-PIC -XT\n 6: 2 None\n 7: 3 GICv3 27 Level -fasteoi a, b c,\n",
		"  CPU0\n 5: 1 chip 99999999999999999999-edge\n", "  CPU0\n5:\n", "  CPU0\n:\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := ParseInterrupts(b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), InterruptsPath) {
				t.Fatalf("error not naming the file: %v", err)
			}
			return
		}
		if len(in.CPUs) == 0 {
			t.Fatal("parsed without CPU columns")
		}
		nums, err := ParseIRQNumbers(b)
		if err != nil || len(nums) != len(in.IRQs) {
			t.Fatalf("ParseIRQNumbers %v, %v for rows %+v", nums, err, in.IRQs)
		}
		seen := map[int]bool{}
		for k, i := range in.IRQs {
			if nums[k] != i.IRQ {
				t.Fatalf("ParseIRQNumbers %v, row %d is IRQ %d", nums, k, i.IRQ)
			}
			if len(i.Counts) != len(in.CPUs) || i.IRQ < 0 || i.IRQ > MaxIRQ || seen[i.IRQ] || i.Chip == "" || i.HWIRQ < -1 {
				t.Fatalf("bad row %+v (CPUs %v)", i, in.CPUs)
			}
			seen[i.IRQ] = true
			for _, a := range i.Actions {
				if a == "" || strings.TrimSpace(a) != a {
					t.Fatalf("bad action %q in %+v", a, i)
				}
			}
		}
	})
}
