#!/bin/sh
# gpuprep's rpm %posttrans. gpuprep 0.1.0 shipped /etc/gpuprep/gpuprep.toml
# as %config(noreplace); later releases ship none. On the upgrade from
# 0.1.0 rpm removes the old file where the admin never edited it, and
# saves an edited one as gpuprep.toml.rpmsave: put that back, so the
# admin's configuration keeps working.
conf=/etc/gpuprep/gpuprep.toml
if [ ! -e "$conf" ] && [ -f "$conf.rpmsave" ]; then
	mv "$conf.rpmsave" "$conf" && echo "gpuprep: kept your edited $conf (gpuprep no longer ships one)" >&2
fi
exit 0
