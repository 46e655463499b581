package irq

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
	"gpuprep/lib/textfmt"
)

// InterruptsPath is the kernel's table of interrupts and their counts.
const InterruptsPath = "/proc/interrupts"

// MaxIRQ bounds the IRQ numbers the parsers accept; Linux numbers them
// below a few hundred thousand even with thousands of CPUs.
const MaxIRQ = 1 << 24

// Interrupts is /proc/interrupts: the online CPUs of its header and its
// numbered rows. Rows with a name instead of a number (NMI, LOC, IPI0,
// ERR, ...) are the architecture's per-CPU events, not IRQs, and are left
// out.
type Interrupts struct {
	// CPUs is the CPU id of each count column ("CPU0 CPU1 CPU3" when
	// CPU2 is offline).
	CPUs []int
	// IRQs are the numbered rows, in the file's order (ascending).
	IRQs []Interrupt
}

// Interrupt is one numbered row of /proc/interrupts, such as
//
//	171:  0  52  IR-PCI-MSIX-0000:18:00.0    1-edge      mlx5_comp0@pci:0000:18:00.0
type Interrupt struct {
	IRQ int
	// Counts are the interrupts each CPU handled, one per
	// Interrupts.CPUs column.
	Counts []uint64
	// Chip is the interrupt chip: "IR-PCI-MSIX-0000:18:00.0" (Linux 6.x
	// per-device MSI domains), "IR-PCI-MSI" (older), "IR-IO-APIC", "GICv3".
	Chip string
	// HWIRQ is the interrupt's number within the chip's domain; -1 when
	// the chip has no domain (the column is blank).
	HWIRQ int64
	// Handler is the flow handler's name after the hwirq ("edge",
	// "fasteoi": x86); Trigger is "Level" or "Edge" where the kernel
	// prints the trigger (arm, arm64, riscv). Either may be "".
	Handler, Trigger string
	// Actions are the names of the handlers requested on it, as drivers
	// gave them ("nvidia", "mlx5_comp3@pci:0000:18:00.0", "PCIe PME");
	// several when the line is shared. Empty when none is requested.
	Actions []string
}

// Total is the interrupt's count summed over the CPUs.
func (i Interrupt) Total() uint64 {
	var n uint64
	for _, c := range i.Counts {
		n += c
	}
	return n
}

// Find returns the row of one IRQ.
func (in Interrupts) Find(irq int) (Interrupt, bool) {
	for _, i := range in.IRQs {
		if i.IRQ == irq {
			return i, true
		}
	}
	return Interrupt{}, false
}

// ReadInterrupts reads /proc/interrupts.
func ReadInterrupts(r host.Root) (Interrupts, error) {
	b, err := r.ReadFile(InterruptsPath)
	if err != nil {
		return Interrupts{}, err
	}
	return ParseInterrupts(b)
}

// ReadIRQNumbers reads the numbers of /proc/interrupts' numbered rows:
// the IRQs in use, all irq_affinity's placement needs of the file. It
// reads the file as a stream, each row's label and no more: a large
// node's file holds hundreds of thousands of counts (1,345 rows of 224
// CPU columns: 3 MB), which the placement does not need.
func ReadIRQNumbers(r host.Root) ([]int, error) {
	f, err := os.Open(r.Path(InterruptsPath))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return scanIRQNumbers(bufio.NewReaderSize(f, 64<<10))
}

// ParseIRQNumbers is ParseInterrupts reading no more than each row's
// label: the numbered rows' IRQs, in the file's order, the architecture's
// events left out; the labels are checked as ParseInterrupts checks them.
func ParseIRQNumbers(b []byte) ([]int, error) {
	return scanIRQNumbers(bufio.NewReader(bytes.NewReader(b)))
}

// scanIRQNumbers is ParseIRQNumbers over a reader. Of a line longer than
// the reader's buffer it reads the start (the label) and skips the rest.
func scanIRQNumbers(br *bufio.Reader) ([]int, error) {
	var irqs []int
	seen := map[int]bool{}
	header := false
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A row's label is at its start; the header is read whole.
			line, err = restOfLine(br, bytes.Clone(line), !header)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read %s: %w", InterruptsPath, err)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if !header {
				if _, perr := parseHeader(string(line)); perr != nil {
					return nil, lineErr(lineNo, "%w", perr)
				}
				header = true
			} else if irq, ok, perr := rowLabel(line); perr != nil {
				return nil, lineErr(lineNo, "%w", perr)
			} else if ok {
				if seen[irq] {
					return nil, lineErr(lineNo, "IRQ %d listed twice", irq)
				}
				seen[irq] = true
				irqs = append(irqs, irq)
			}
		}
		if err != nil { // io.EOF
			break
		}
	}
	if !header {
		return nil, fmt.Errorf("%s: empty (want a header of CPU columns)", InterruptsPath)
	}
	return irqs, nil
}

// restOfLine reads past the next newline, appending what it reads to
// line when keep is set.
func restOfLine(br *bufio.Reader, line []byte, keep bool) ([]byte, error) {
	for {
		more, err := br.ReadSlice('\n')
		if keep {
			line = append(line, more...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// rowLabel reads the label of a row after the header: its IRQ, or ok
// false for an architecture event ("NMI:").
func rowLabel(line []byte) (irq int, ok bool, err error) {
	i := bytes.IndexByte(line, ':')
	if i < 0 {
		return 0, false, fmt.Errorf("want \"<irq>:\" or \"<name>:\", found %q", textfmt.Clip(string(line), 60))
	}
	label := string(bytes.TrimSpace(line[:i]))
	if label == "" || strings.ContainsAny(label, " \t") {
		return 0, false, fmt.Errorf("want \"<irq>:\" or \"<name>:\", found %q", textfmt.Clip(string(line), 60))
	}
	if label[0] < '0' || label[0] > '9' {
		return 0, false, nil // NMI, LOC, IPI0, ERR: per-CPU events, not IRQs
	}
	irq, err = parseIRQ(label)
	return irq, err == nil, err
}

// ParseInterrupts parses the text of /proc/interrupts: a header of CPU
// columns, then one row per IRQ ("24:", counts, chip, hwirq and handler,
// actions) and per architecture event ("NMI:", skipped). A numbered row
// must have one count per header column. Errors name the file and the
// line ("/proc/interrupts:7: ...").
func ParseInterrupts(b []byte) (Interrupts, error) {
	var in Interrupts
	seen := map[int]bool{}
	header := false
	for n, line := range strings.Split(string(b), "\n") {
		lineNo := n + 1
		if strings.TrimSpace(line) == "" {
			continue
		}
		if !header {
			cpus, err := parseHeader(line)
			if err != nil {
				return Interrupts{}, lineErr(lineNo, "%w", err)
			}
			in.CPUs, header = cpus, true
			continue
		}
		irq, ok, err := rowLabel([]byte(line))
		if err != nil {
			return Interrupts{}, lineErr(lineNo, "%w", err)
		}
		if !ok {
			continue
		}
		_, rest, _ := strings.Cut(line, ":")
		if seen[irq] {
			return Interrupts{}, lineErr(lineNo, "IRQ %d listed twice", irq)
		}
		seen[irq] = true
		row, err := parseRow(irq, rest, len(in.CPUs))
		if err != nil {
			return Interrupts{}, lineErr(lineNo, "IRQ %d: %w", irq, err)
		}
		in.IRQs = append(in.IRQs, row)
	}
	if !header {
		return Interrupts{}, fmt.Errorf("%s: empty (want a header of CPU columns)", InterruptsPath)
	}
	return in, nil
}

// parseHeader reads the header line: "CPU<n>" columns, ascending.
func parseHeader(line string) ([]int, error) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return nil, fmt.Errorf("no CPU columns in the header")
	}
	cpus := make([]int, 0, len(f))
	for _, c := range f {
		id, ok := strings.CutPrefix(c, "CPU")
		v, err := strconv.Atoi(id)
		if !ok || err != nil || v < 0 || v > cpuset.MaxCPU || id != strconv.Itoa(v) {
			return nil, fmt.Errorf("header: want CPU<n> columns, found %q", textfmt.Clip(c, 60))
		}
		if len(cpus) > 0 && v <= cpus[len(cpus)-1] {
			return nil, fmt.Errorf("header: CPU%d after CPU%d (want ascending)", v, cpus[len(cpus)-1])
		}
		cpus = append(cpus, v)
	}
	return cpus, nil
}

// parseIRQ reads an IRQ number: decimal digits, at most MaxIRQ.
func parseIRQ(s string) (int, error) {
	if s == "" || len(s) > 9 || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not an IRQ number", textfmt.Clip(s, 60))
	}
	v, _ := strconv.Atoi(s)
	if v > MaxIRQ {
		return 0, fmt.Errorf("IRQ %d is out of range (max %d)", v, MaxIRQ)
	}
	return v, nil
}

// parseRow reads what follows "<irq>:": ncpu counts, then the chip, the
// hwirq joined to the handler ("9437184-edge", "-edge" without a domain),
// the trigger ("Level", arm), and the actions, ", "-separated (an
// action's name may hold spaces: "PCIe PME").
func parseRow(irq int, rest string, ncpu int) (Interrupt, error) {
	row := Interrupt{IRQ: irq, HWIRQ: -1, Counts: make([]uint64, ncpu)}
	for c := 0; c < ncpu; c++ {
		var tok string
		tok, rest = field(rest)
		if tok == "" {
			return row, fmt.Errorf("%d counts for %d CPU columns", c, ncpu)
		}
		v, err := strconv.ParseUint(tok, 10, 64)
		if err != nil {
			return row, fmt.Errorf("count %q for the CPU column %d is not a number", textfmt.Clip(tok, 60), c+1)
		}
		row.Counts[c] = v
	}
	row.Chip, rest = field(rest)
	if row.Chip == "" {
		return row, fmt.Errorf("no chip column after the counts")
	}
	tok, after := field(rest)
	if hw, handler, ok, err := hwirqHandler(tok); err != nil {
		return row, err
	} else if ok {
		row.HWIRQ, row.Handler = hw, handler
		rest = after
		tok, after = field(rest)
	}
	if name, _, _ := strings.Cut(tok, "-"); name == "Level" || name == "Edge" {
		row.Trigger = name
		if h, ok := strings.CutPrefix(tok, name+"-"); ok && h != "" {
			row.Handler = h
		}
		rest = after
		if tok, after = field(rest); strings.HasPrefix(tok, "-") && len(tok) > 1 {
			row.Handler, rest = tok[1:], after // "Level   -fasteoi"
		}
	}
	for a := range strings.SplitSeq(strings.TrimSpace(rest), ",") {
		if a = strings.TrimSpace(a); a != "" {
			row.Actions = append(row.Actions, a)
		}
	}
	return row, nil
}

// hwirqHandler splits the hwirq column joined to the handler's name
// ("9437184-edge", "2", "-edge" where the chip has no domain). ok is false
// for a token that is neither (an action's name).
func hwirqHandler(tok string) (hw int64, handler string, ok bool, err error) {
	num, handler, _ := strings.Cut(tok, "-")
	if strings.HasPrefix(tok, "-") {
		if handler == "" {
			return -1, "", false, nil
		}
		return -1, handler, true, nil
	}
	if num == "" || strings.Trim(num, "0123456789") != "" {
		return -1, "", false, nil
	}
	v, perr := strconv.ParseInt(num, 10, 64)
	if perr != nil {
		return -1, "", false, fmt.Errorf("hwirq %q is out of range", textfmt.Clip(num, 60))
	}
	return v, handler, true, nil
}

// field returns the first white-space separated word of s and what
// follows it.
func field(s string) (word, rest string) {
	s = strings.TrimLeft(s, " \t")
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

// lineErr is an error at a line of /proc/interrupts.
func lineErr(line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %w", InterruptsPath, line, fmt.Errorf(format, args...))
}
