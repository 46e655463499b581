package main

import "path/filepath"

// el8StartFiles is the copyright paragraph of what the EL8 build
// (packaging/el8/build.sh: zig 0.11's `zig cc -target x86_64-linux-gnu.2.28`)
// links into each cgo program besides Go's and the modules' code: glibc
// 2.28's start files and libc_nonshared.a, which zig builds from the glibc
// sources it carries (LGPL-2.1+ with glibc's exception for these files),
// and zig's compiler_rt (Expat). The ordinary build links the system's
// own, as every C program does.
const el8StartFiles = `
Files: vendor/el8-start-files/*
Copyright: Free Software Foundation, Inc.
 Zig contributors
Comment: The rpm's gpuprep-prolog, gpuprep-epilog, gpuprep-gres and
 gpuprep-health are linked by zig 0.11 (zig cc -target x86_64-linux-gnu.2.28):
 each contains glibc 2.28's start files (crt1.o, crti.o, crtn.o) and
 libc_nonshared.a, built by zig from the glibc sources it carries, and
 zig's compiler_rt.
License: LGPL-2.1+ with glibc's start-file exception, and Expat
 The glibc files are under the GNU Lesser General Public License, version
 2.1 or later (/usr/share/licenses/glibc/COPYING.LIB on EL8), with this
 exception, stated in each of them:
 .
 In addition to the permissions in the GNU Lesser General Public License,
 the Free Software Foundation gives you unlimited permission to link the
 compiled version of this file with other programs, and to distribute
 those programs without any restriction coming from the use of this file.
 .
 zig's compiler_rt is under the Expat (MIT) licence:
 .
 Copyright (c) Zig contributors
 .
 Permission is hereby granted, free of charge, to any person obtaining a
 copy of this software and associated documentation files (the
 "Software"), to deal in the Software without restriction, including
 without limitation the rights to use, copy, modify, merge, publish,
 distribute, sublicense, and/or sell copies of the Software, and to permit
 persons to whom the Software is furnished to do so, subject to the
 following conditions:
 .
 The above copyright notice and this permission notice shall be included
 in all copies or substantial portions of the Software.
 .
 THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS
 OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF
 MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN
 NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM,
 DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR
 OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE
 USE OR OTHER DEALINGS IN THE SOFTWARE.
`

// withStartFiles adds el8StartFiles to the rpm's copyright when its cgo
// programs are the EL8 build (rpmBin is a folder named el8).
func withStartFiles(copyright, rpmBin string) string {
	if filepath.Base(filepath.Clean(rpmBin)) != "el8" {
		return copyright
	}
	return copyright + el8StartFiles
}
