# gpuprep: make build | test | demo | bench | package | install | uninstall | man | el8 | lint
SHELL := /bin/bash
GO ?= go
export CGO_CFLAGS := -Wno-deprecated-declarations
PREFIX ?= /usr/local
DESTDIR ?=
# VERSION is the release (semantic version, the VERSION file); COMMIT the
# commit it is built from, "-dirty" when the work tree has changes, "unknown"
# outside git. --version prints both; the packages carry VERSION.
VERSION := $(shell cat VERSION)
COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD 2>/dev/null || { git rev-parse --git-dir >/dev/null 2>&1 && echo -dirty; })
LDFLAGS := -s -w -X gpuprep/lib/cmdenv.Version=$(VERSION) -X gpuprep/lib/cmdenv.Commit=$(COMMIT)
BINS := bin/gpuprep-prolog bin/gpuprep-epilog bin/srunwrap bin/gpuprep-gres bin/gpuprep-health
# bin/sim/ holds the same programs built with -tags gpuprep_mock: they also
# accept --gpu-backend mock:<model> (go-nvml's mock servers), for the demo and
# the benchmarks on simulated nodes. Install bin/, never bin/sim/.
SIMBINS := $(BINS:bin/%=bin/sim/%)
# SIMTOOLS are the simulated node's own programs, for the demo: a simulated
# nvidia-cuda-mps-control (internal/mpssim; no GPU, no root; it exits after
# 10 minutes). Never installed or packaged.
SIMTOOLS := bin/sim/nvidia-cuda-mps-control

.PHONY: all build test unit e2e deps demo bench install uninstall man package lint fuzz fixtures clean
.PHONY: vm-image test-node vm el8 test-matrix release

all: build

build: $(BINS) $(SIMBINS) $(SIMTOOLS)

bin/gpuprep-prolog: FORCE ; $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $@ ./prolog
bin/gpuprep-epilog: FORCE ; $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $@ ./epilog
# srunwrap is static (no cgo, no libc): it runs inside any container image.
bin/srunwrap: FORCE ; CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $@ ./srunwrap
bin/gpuprep-gres: FORCE ; $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $@ ./gres
bin/gpuprep-health: FORCE ; $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $@ ./health
bin/sim/gpuprep-prolog: FORCE ; $(GO) build -tags gpuprep_mock -trimpath -ldflags '$(LDFLAGS)' -o $@ ./prolog
bin/sim/gpuprep-epilog: FORCE ; $(GO) build -tags gpuprep_mock -trimpath -ldflags '$(LDFLAGS)' -o $@ ./epilog
bin/sim/srunwrap: FORCE ; CGO_ENABLED=0 $(GO) build -tags gpuprep_mock -trimpath -ldflags '$(LDFLAGS)' -o $@ ./srunwrap
bin/sim/gpuprep-gres: FORCE ; $(GO) build -tags gpuprep_mock -trimpath -ldflags '$(LDFLAGS)' -o $@ ./gres
bin/sim/gpuprep-health: FORCE ; $(GO) build -tags gpuprep_mock -trimpath -ldflags '$(LDFLAGS)' -o $@ ./health
bin/sim/nvidia-cuda-mps-control: FORCE ; CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $@ ./internal/mpssim/cmd/nvidia-cuda-mps-control
FORCE:

# deps installs what the tests need on a fresh Debian 12 machine (as root):
# Slurm (slurm-wlm), munge, hwloc, libhwloc-dev, gcc, strace, Prometheus
# (promtool) and prometheus-node-exporter, and the packaging tools
# (test/install-deps.sh lists them). It changes nothing when they are there.
deps:
	bash test/install-deps.sh

# test runs every test: unit tests on fixture roots and the mock GPUs, the
# hwloc cross-checks, the end-to-end tests against a real Slurm, and the
# scenarios on the test node VM (test/vmtest: systemd, cgroup v2, Slurm's
# cgroup plugin; vm-image builds its image first, once per machine). Fixture
# roots are unpacked in /dev/shm when it is a tmpfs with 4 GiB free. The
# 60-minute limit leaves room for a slower or busier machine inside CI's 90;
# docs/TESTING.md gives the times measured.
test: deps lint build vm-image
	$(GO) test -count=1 -timeout 60m ./...

# vm-image builds the test node VM image (Debian 12, systemd, cgroup v2,
# Slurm 22.05 with proctrack/cgroup and task/cgroup, 2 sockets, 2 NUMA nodes)
# in /var/cache/gpuprep-vm, as root; a no-op in under a second when cached
# (about 3 minutes from scratch on 2 cores). test/vm/build-image.sh says more.
vm-image:
	bash test/vm/build-image.sh >/dev/null

# test-node boots the VM once (1-2 minutes under TCG), installs gpuprep in it
# with make install and runs the scenarios of test/vmtest against its real
# systemd and slurmd.
test-node: deps build vm-image
	$(GO) test -count=1 -v -timeout 30m ./test/vmtest/...

# test-matrix runs the topology oracles (hwloc, slurmd -C) and the test
# node scenarios against each Debian release's Slurm, hwloc, kernel and
# systemd: bookworm (Slurm 22.05), trixie (24.11), sid (26.05); choose with
# GPUPREP_MATRIX_RELEASES="trixie sid". On demand and before each release,
# not in make test; about 40 minutes a release. docs/COMPATIBILITY.md holds
# its last results; test/matrix/matrix.sh says more.
test-matrix: deps build
	bash test/matrix/matrix.sh

# vm boots a throwaway test node for trying gpuprep by hand and prints how to
# log in; test/vm/vm.sh stop powers it off.
vm: vm-image
	bash test/vm/vm.sh boot

unit: build
	$(GO) test -count=1 -short ./lib/... ./internal/...

e2e: deps build
	$(GO) test -count=1 -v ./test/...

# demo runs gpuprep on the simulated DGX H100 node (fixture root + go-nvml
# mock), with the programs of bin/sim; DEMO_NODE=dgxa100 or dgxb200 runs it
# on another simulated node.
demo: build
	bash examples/demo.sh

bench: build
	bash test/bench.sh
	bash test/bench-hooks.sh
	GO=$(GO) bash test/bench-irq.sh
	bash test/bench-health.sh
	bash test/bench-srunwrap.sh

# bench-noise: as root on a cgroup v2 GPU node, with the programs already in
# bin/ (no Go needed there): a GPU feeder with noisy host services, before and
# after gpuprep-prolog confines them to housekeeping_cpus (test/bench-noise.sh
# says what it checks). HK=0-3 STEPS=1500 JOB_CPUS=... override its defaults.
# bench-step: as root, the step a prolog's duration makes in a job's start
# on this machine's Slurm (test/bench-step.sh; about 10 minutes).
.PHONY: bench-step
bench-step:
	bash test/bench-step.sh

.PHONY: bench-noise
bench-noise:
	bash test/bench-noise.sh

# gpunode-kit: what test/gpunode/run.sh needs on a real GPU node, which has
# no Go: the installed programs, nvmlprobe and topocheck, in bin/gpunode/ and
# bin/gpunode-kit.tgz (with ../shared/tools/capture-root.sh when it is there).
# On the node: tar xzf gpunode-kit.tgz && sudo gpunode/run.sh OUTDIR
.PHONY: gpunode-kit
gpunode-kit: $(BINS)
	rm -rf bin/gpunode && mkdir -p bin/gpunode/bin
	$(GO) build -trimpath -ldflags '-s -w' -o bin/gpunode/bin/nvmlprobe ./test/nvmlprobe
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o bin/gpunode/bin/topocheck ./test/topocheck
	cp $(BINS) bin/gpunode/bin/
	$(GO) test -c -trimpath -o bin/gpunode/bin/cuda.test ./lib/cuda
	cp test/gpunode/run.sh test/gpunode/allreduce.py test/gpunode/times.py test/gpunode/mps.py test/gpunode/mps-proof.sh test/gpunode/probe-proof.sh test/gpunode/probe_torch.py test/gpunode/evidence-proof.sh test/gpunode/evidence_power.py bin/gpunode/
	if [ -f ../shared/tools/capture-root.sh ]; then cp ../shared/tools/capture-root.sh bin/gpunode/; fi
	tar czf bin/gpunode-kit.tgz -C bin gpunode

fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=30s ./lib/cpuset
	$(GO) test -run='^$$' -fuzz=FuzzParseGresConf -fuzztime=30s ./lib/gresconf
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=30s ./lib/config

fixtures:
	$(GO) run ./internal/fixturegen/cmd/mkfixtures -out test/roots

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi
	$(GO) vet ./...

# install copies the five programs (not bin/sim/), an example configuration
# (the admin writes /etc/gpuprep/gpuprep.toml), the tmpfiles.d rule, the
# examples and the man pages; uninstall removes exactly those files. The
# packages (make package) are the way to install on a node.
DOCDIR := $(PREFIX)/share/doc/gpuprep
MANDIR := $(PREFIX)/share/man
EXAMPLES := examples/slurm.conf.fragment examples/gpuprep.toml examples/health-models.toml examples/srunwrap/taskprolog.sh examples/gres.conf.mistakes
install: $(BINS) man
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/bin $(DESTDIR)/etc/gpuprep $(DESTDIR)/etc/tmpfiles.d $(DESTDIR)$(DOCDIR)/examples
	install -m 0755 bin/gpuprep-prolog bin/gpuprep-epilog bin/gpuprep-gres bin/gpuprep-health $(DESTDIR)$(PREFIX)/sbin/
	install -m 0755 bin/srunwrap $(DESTDIR)$(PREFIX)/bin/
	install -D -m 0755 packaging/irqbalance-policy $(DESTDIR)$(PREFIX)/lib/gpuprep/irqbalance-policy
	install -m 0644 examples/gpuprep.toml $(DESTDIR)/etc/gpuprep/gpuprep.toml.example
	install -m 0644 examples/tmpfiles.d/gpuprep.conf $(DESTDIR)/etc/tmpfiles.d/gpuprep.conf
	install -m 0644 $(EXAMPLES) $(DESTDIR)$(DOCDIR)/examples/
	cd build/man && for f in man*/*.gz; do install -D -m 0644 $$f $(DESTDIR)$(MANDIR)/$$f || exit 1; done
	install -d $(DESTDIR)$(COMPLETIONDIR)
	install -m 0644 $(addprefix build/man/bash-completion/,$(COMPLETIONS)) $(DESTDIR)$(COMPLETIONDIR)/

uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/sbin/,gpuprep-prolog gpuprep-epilog gpuprep-gres gpuprep-health) $(DESTDIR)$(PREFIX)/bin/srunwrap
	rm -f $(DESTDIR)/etc/gpuprep/gpuprep.toml.example $(DESTDIR)/etc/tmpfiles.d/gpuprep.conf $(DESTDIR)$(PREFIX)/lib/gpuprep/irqbalance-policy
	-rmdir $(DESTDIR)$(PREFIX)/lib/gpuprep 2>/dev/null
	rm -f $(addprefix $(DESTDIR)$(DOCDIR)/examples/,$(notdir $(EXAMPLES)))
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/,$(MANPAGES))
	rm -f $(addprefix $(DESTDIR)$(COMPLETIONDIR)/,$(COMPLETIONS))
	-rmdir $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR) $(DESTDIR)/etc/gpuprep 2>/dev/null

# man writes the man pages into build/man (man1/, man5/, man8/), generated
# from the programs' flag definitions and the configuration schema
# (internal/mangen) and compressed with gzip -9n.
# COMPLETIONS are the programs' bash completions (internal/mangen), made
# with the man pages; bash-completion finds them in COMPLETIONDIR.
COMPLETIONS := gpuprep-prolog gpuprep-epilog gpuprep-gres gpuprep-health srunwrap
COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
MANPAGES := man1/srunwrap.1.gz man8/gpuprep-prolog.8.gz man8/gpuprep-epilog.8.gz man8/gpuprep-gres.8.gz man8/gpuprep-health.8.gz man5/gpuprep.toml.5.gz
man:
	@test -f internal/mangen/cmd/mangen/main.go || { echo "make man: internal/mangen/cmd/mangen is missing: no generator for the man pages" >&2; exit 1; }
	@# In a folder of its own, moved into place at the end: a make install
	@# and a make package may run at once (the tests do).
	tmp=build/man.tmp.$$$$ && rm -rf $$tmp && $(GO) run ./internal/mangen/cmd/mangen -out $$tmp >/dev/null && \
	gzip -9nf $$tmp/man*/*.[0-9] && \
	for f in $(MANPAGES) $(addprefix bash-completion/,$(COMPLETIONS)); do test -f $$tmp/$$f || { echo "make man: the generator wrote no $$f" >&2; rm -rf $$tmp; exit 1; }; done && \
	rm -rf build/man && { mv -T $$tmp build/man 2>/dev/null || rm -rf $$tmp; }

# package builds dist/gpuprep_$(VERSION)_amd64.deb and
# dist/gpuprep-$(VERSION)-1.x86_64.rpm with nfpm (packaging/nfpm.yaml;
# packaging/pkgprep computes the glibc each needs and writes the copyright
# file, the commented configuration, and the deb's and the rpm's changelogs
# (CHANGELOG.md's releases, alike) into $(PKGBUILD); the rpm is built from
# $(PKGBUILD)/nfpm-rpm.yaml, nfpm.yaml with the changelog key). The rpm's
# cgo programs are built for glibc 2.28 into
# bin/el8/ by packaging/el8/build.sh (zig cc); where zig cannot be had
# (its exit status 3) they come from bin/ and the rpm requires the glibc
# those need (2.34: not EL8), with a warning; in CI (CI=true) that fails.
# Two builds of one commit are byte-identical: every file's time and the
# packages' build time are the commit's (SOURCE_DATE_EPOCH, unless set),
# and the rpm's build host is fixed (nfpm.yaml).
DIST ?= dist
PKGBUILD ?= build/pkg
MAINTAINER ?= $(shell git log -1 --format='%an <%ae>' -- VERSION 2>/dev/null | grep . || echo 'The gpuprep Authors <authors@gpuprep.invalid>')
package: $(BINS) man
	rm -rf $(PKGBUILD) && mkdir -p $(PKGBUILD) $(DIST)
	rpmbin=bin/el8; GPUPREP_LDFLAGS='$(LDFLAGS)' bash packaging/el8/build.sh || { rc=$$?; [ $$rc = 3 ] && [ "$$CI" != true ] || exit $$rc; rpmbin=bin; \
		echo "make package: no zig, so no EL8 build: the rpm takes its programs from bin/" >&2; }; \
	$(GO) run ./packaging/pkgprep -version $(VERSION) -commit $(COMMIT) -bin bin -rpm-bin $$rpmbin \
		-goroot "$$($(GO) env GOROOT)" -modcache "$$($(GO) env GOMODCACHE)" -maintainer '$(MAINTAINER)' -out $(PKGBUILD)
	set -a && . $(PKGBUILD)/nfpm.env && set +a && nfpm=$$($(GO) tool -n nfpm) && \
	export GPUPREP_HOMEPAGE='$(HOMEPAGE)' && \
	export SOURCE_DATE_EPOCH=$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || echo 0)} && \
	$$nfpm package -f packaging/nfpm.yaml -p deb -t $(DIST)/gpuprep_$(VERSION)_amd64.deb && \
	$$nfpm package -f $(PKGBUILD)/nfpm-rpm.yaml -p rpm -t $(DIST)/gpuprep-$(VERSION)-1.x86_64.rpm

# el8 builds bin/el8/: the cgo programs for glibc 2.28 (RHEL/Rocky 8) with
# zig cc; packaging/el8/README.md says how.
el8:
	GPUPREP_LDFLAGS='$(LDFLAGS)' bash packaging/el8/build.sh

# release cuts release x.y.z from a clean tree: make release VERSION=x.y.z
# checks the version against VERSION and CHANGELOG.md's rule, moves
# [Unreleased] under "## [x.y.z] - <today UTC>", writes VERSION, commits
# and tags vx.y.z (packaging/pkgprep/release.go); DRYRUN=1 only checks and
# prints what it would do.
release:
	$(if $(filter command line,$(origin VERSION)),,$(error make release: name the new version: make release VERSION=x.y.z [DRYRUN=1]))
	@mkdir -p build && $(GO) build -o build/pkgprep ./packaging/pkgprep
	@build/pkgprep release -version '$(VERSION)' $(if $(DRYRUN),-dry-run)

clean:
	rm -rf bin build dist
