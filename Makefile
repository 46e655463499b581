# gpuprep: make build | test | demo | bench | install | lint
SHELL := /bin/bash
GO ?= go
export CGO_CFLAGS := -Wno-deprecated-declarations
PREFIX ?= /usr/local
DESTDIR ?=
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X gpuprep/lib/cmdenv.Version=$(VERSION)
BINS := bin/gpuprep-prolog bin/gpuprep-epilog bin/srunwrap bin/gpuprep-gres
# bin/sim/ holds the same programs built with -tags gpuprep_mock: they also
# accept --gpu-backend mock:<model> (go-nvml's mock servers), for the demo and
# the benchmarks on simulated nodes. Install bin/, never bin/sim/.
SIMBINS := $(BINS:bin/%=bin/sim/%)

.PHONY: all build test unit e2e deps demo bench install lint fuzz fixtures clean
.PHONY: vm-image test-node vm

all: build

build: $(BINS) $(SIMBINS)

bin/gpuprep-prolog: FORCE ; $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $@ ./prolog
bin/gpuprep-epilog: FORCE ; $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $@ ./epilog
# srunwrap is static (no cgo, no libc): it runs inside any container image.
bin/srunwrap: FORCE ; CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $@ ./srunwrap
bin/gpuprep-gres: FORCE ; $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $@ ./gres
bin/sim/gpuprep-prolog: FORCE ; $(GO) build -tags gpuprep_mock -trimpath -ldflags '$(LDFLAGS)' -o $@ ./prolog
bin/sim/gpuprep-epilog: FORCE ; $(GO) build -tags gpuprep_mock -trimpath -ldflags '$(LDFLAGS)' -o $@ ./epilog
bin/sim/srunwrap: FORCE ; CGO_ENABLED=0 $(GO) build -tags gpuprep_mock -trimpath -ldflags '$(LDFLAGS)' -o $@ ./srunwrap
bin/sim/gpuprep-gres: FORCE ; $(GO) build -tags gpuprep_mock -trimpath -ldflags '$(LDFLAGS)' -o $@ ./gres
FORCE:

# deps installs what the tests need on a fresh Debian 12 machine (as root):
# Slurm (slurm-wlm), munge, hwloc, libhwloc-dev, gcc and strace. It changes nothing
# when they are there.
deps:
	bash test/install-deps.sh

# test runs every test: unit tests on fixture roots and the mock GPUs, the
# hwloc cross-checks, the end-to-end tests against a real Slurm, and the
# scenarios on the test node VM (test/vmtest: systemd, cgroup v2, Slurm's
# cgroup plugin; vm-image builds its image first, once per machine). Fixture
# roots are unpacked in /dev/shm when it is a tmpfs with 4 GiB free. The
# 60-minute limit leaves room for a slower or busier machine inside CI's 90;
# README.md gives the times measured.
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
	bash test/bench-health.sh
	bash test/bench-srunwrap.sh

# bench-noise: as root on a cgroup v2 GPU node, with the programs already in
# bin/ (no Go needed there): a GPU feeder with noisy host services, before and
# after gpuprep-prolog confines them to housekeeping_cpus (test/bench-noise.sh
# says what it checks). HK=0-3 STEPS=1500 JOB_CPUS=... override its defaults.
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
	cp test/gpunode/run.sh test/gpunode/allreduce.py test/gpunode/times.py bin/gpunode/
	if [ -f ../shared/tools/capture-root.sh ]; then cp ../shared/tools/capture-root.sh bin/gpunode/; fi
	tar czf bin/gpunode-kit.tgz -C bin gpunode

fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=30s ./lib/cpuset
	$(GO) test -run='^$$' -fuzz=FuzzParseGresConf -fuzztime=30s ./lib/slurm
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=30s ./lib/config

fixtures:
	$(GO) run ./internal/fixturegen/cmd/mkfixtures -out test/roots

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi
	$(GO) vet ./...

install: build
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/bin $(DESTDIR)/etc/gpuprep
	install -m 0755 bin/gpuprep-prolog bin/gpuprep-epilog bin/gpuprep-gres $(DESTDIR)$(PREFIX)/sbin/
	install -m 0755 bin/srunwrap $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 examples/gpuprep.toml $(DESTDIR)/etc/gpuprep/gpuprep.toml.example
	install -d $(DESTDIR)/etc/tmpfiles.d
	install -m 0644 examples/tmpfiles.d/gpuprep.conf $(DESTDIR)/etc/tmpfiles.d/gpuprep.conf

clean:
	rm -rf bin
