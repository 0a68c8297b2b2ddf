#!/usr/bin/env python3
"""Check that every kptr destructor of a kernel build survives IBT sealing.

Maps call kptr destructors through a function pointer. On a kernel built
with CONFIG_X86_KERNEL_IBT, objtool lists the ENDBR of every function whose
address no code takes in .ibt_endbr_seal, and the kernel overwrites those
ENDBRs at boot: an indirect call to such a function then faults on CPUs
with IBT. QEMU does not emulate IBT, so this is checked in the binary.

The registered destructors are read from the source tree: the functions
named in a BTF_ID_LIST whose name contains "dtor", in every file that calls
register_btf_id_dtor_kfuncs(). Each must be a symbol of vmlinux (or of the
given modules) that starts with ENDBR64 and whose ENDBR is not sealed.

usage: check-ibt-dtors.py --src TREE --vmlinux VMLINUX [--config .config]
                          [--module NAME.ko ...]
Exit status 0 when every destructor keeps its ENDBR, 1 otherwise, 2 when
the build cannot be checked (no IBT, a tool missing).

Reads the tree's sources, vmlinux (objdump, nm), .config and the modules;
writes nothing but its report on stdout.
"""
import argparse
import os
import re
import struct
import subprocess
import sys

ENDBR64 = bytes.fromhex("f30f1efa")


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def registered_dtors(src):
    """Destructor functions named by the dtor BTF_ID lists of the tree."""
    names = {}
    for top in ("kernel", "net", "tools/testing/selftests/bpf/bpf_testmod"):
        for dirpath, _, files in os.walk(os.path.join(src, top)):
            for f in files:
                if not f.endswith(".c"):
                    continue
                path = os.path.join(dirpath, f)
                text = open(path, errors="replace").read()
                if "register_btf_id_dtor_kfuncs(" not in text:
                    continue
                for m in re.finditer(r"BTF_ID_LIST\((\w*dtor\w*)\)\n((?:.*\n)*?)\n", text):
                    for fn in re.findall(r"BTF_ID\(func,\s*(\w+)\)", m.group(2)):
                        names[fn] = os.path.relpath(path, src)
    return names


class Elf:
    """The parts of an ELF file this check needs, through binutils."""

    def __init__(self, path):
        self.path = path
        self.sections = {}
        for line in run("readelf", "-SW", path).splitlines():
            m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
            if m:
                self.sections[m.group(1)] = (int(m.group(2), 16), int(m.group(3), 16),
                                             int(m.group(4), 16))
        self.symbols = {}
        for line in run("nm", path).splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "tTwW":
                self.symbols.setdefault(parts[2], int(parts[0], 16))

    def read(self, addr, size):
        """Bytes at a virtual address of a linked image."""
        for name, (vaddr, off, sz) in self.sections.items():
            if vaddr <= addr < vaddr + sz:
                with open(self.path, "rb") as f:
                    f.seek(off + addr - vaddr)
                    return f.read(size)
        return b""

    def sealed(self):
        """Addresses listed in .ibt_endbr_seal (each entry: s32 self-relative)."""
        if ".ibt_endbr_seal" not in self.sections:
            return set()
        vaddr, off, size = self.sections[".ibt_endbr_seal"]
        with open(self.path, "rb") as f:
            f.seek(off)
            data = f.read(size)
        out = set()
        for i in range(0, len(data) - 3, 4):
            (rel,) = struct.unpack_from("<i", data, i)
            out.add((vaddr + i + rel) & 0xFFFFFFFFFFFFFFFF)
        return out


def module_sealed(path):
    """Functions a module's .ibt_endbr_seal names, from its relocations."""
    out = set()
    section = None
    for line in run("readelf", "-rW", path).splitlines():
        m = re.match(r"Relocation section '([^']+)'", line)
        if m:
            section = m.group(1)
            continue
        if section != ".rela.ibt_endbr_seal":
            continue
        parts = line.split()
        if len(parts) >= 7 and parts[2].startswith("R_X86_64"):
            sym, addend = parts[4], parts[6] if parts[5] == "+" else "-" + parts[6]
            out.add((sym, int(addend, 16)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", required=True)
    ap.add_argument("--vmlinux", required=True)
    ap.add_argument("--config")
    ap.add_argument("--module", action="append", default=[])
    args = ap.parse_args()

    config = args.config or os.path.join(os.path.dirname(args.vmlinux), ".config")
    if "CONFIG_X86_KERNEL_IBT=y\n" not in open(config).read():
        print(f"check-ibt-dtors: {config} has no CONFIG_X86_KERNEL_IBT=y: nothing to check")
        return 2
    dtors = registered_dtors(args.src)
    if not dtors:
        print("check-ibt-dtors: no destructor registration found in the tree")
        return 1
    vmlinux = Elf(args.vmlinux)
    sealed = vmlinux.sealed()
    modules = [(ko, Elf(ko), module_sealed(ko)) for ko in args.module]
    failed = 0
    for fn, where in sorted(dtors.items()):
        if fn in vmlinux.symbols:
            addr = vmlinux.symbols[fn]
            head = vmlinux.read(addr, 4)
            if head != ENDBR64:
                verdict = "FAIL: no ENDBR64 at its entry"
            elif addr in sealed:
                verdict = "FAIL: ENDBR sealed (listed in .ibt_endbr_seal)"
            else:
                verdict = "ok"
            print(f"{verdict:50} {fn} (vmlinux, {where})")
        else:
            for ko, elf, seals in modules:
                if fn in elf.symbols:
                    if (fn, 0) in seals or any(s == fn for s, _ in seals):
                        verdict = "FAIL: ENDBR sealed (listed in .ibt_endbr_seal)"
                    else:
                        verdict = "ok"
                    print(f"{verdict:50} {fn} ({os.path.basename(ko)}, {where})")
                    break
            else:
                verdict = "FAIL: not in vmlinux or the modules given"
                print(f"{verdict:50} {fn} ({where})")
        failed += verdict != "ok"
    print(f"{len(dtors) - failed} of {len(dtors)} destructors keep their ENDBR")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
