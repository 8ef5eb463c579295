"""Regenerates proto/envoy/** from the reference's v2 field tables (formats.md Appendix A) plus
proto/extras.md (messages the appendix only references, in the same table format).
Usage: python3 proto/generate.py [path/to/formats.md [out-dir]]   (out-dir: next to this script)
A note in parentheses after a field's type or an enum's values is for the reader, not the schema."""
import re, sys, os, collections
HERE = os.path.dirname(os.path.abspath(__file__))
src = open(sys.argv[1] if len(sys.argv) > 1 else '/work/shared/reference/formats.md').read()
src = src[src.index('## Appendix A'):]
extra = open(os.path.join(HERE, 'extras.md')).read()
msgs = collections.OrderedDict()   # full -> dict(fields=[...], file=path)
enums = collections.OrderedDict()  # full -> [(name,num)]
pkg_of = {}
def parse(text):
    cur_file = None; cur_msg = None
    for line in text.splitlines():
        m = re.match(r'^#### `([^`]+)`', line)
        if m:
            cur_file = m.group(1); cur_msg = None; continue
        m = re.match(r'^\*\*`([^`]+)`\*\*', line)
        if m:
            cur_msg = m.group(1)
            msgs.setdefault(cur_msg, {'fields': [], 'file': cur_file})
            pkg_of[cur_msg] = os.path.dirname(cur_file).replace('/', '.')
            continue
        m = re.match(r'^- enum `([^`]+)`: (.*)$', line)
        if m:
            full = m.group(1)
            values = re.sub(r'\s*\([^)]*\)$', '', m.group(2))
            enums[full] = [tuple(v.strip().split('=')) for v in values.split(',')]
            pkg_of[full] = os.path.dirname(cur_file).replace('/', '.')
            continue
        m = re.match(r'^\| (\w+) \| (\d+) \| (.+?) \|$', line)
        if m and cur_msg:
            name, num, typ = m.groups()
            flags = re.findall(r'\[([^\]]+)\]', typ)
            typ = re.sub(r'\s*\[[^\]]+\]', '', typ)
            typ = re.sub(r'\s*\([^)]*\)$', '', typ).strip()
            msgs[cur_msg]['fields'].append(dict(name=name, num=int(num), type=typ, flags=flags))
parse(src); parse(extra)
SCALARS = {'string','bool','bytes','double','float','int32','int64','uint32','uint64','sint32','sint64','fixed32','fixed64','sfixed32','sfixed64'}
WKT = {'google.protobuf.Duration':'duration','google.protobuf.Any':'any','google.protobuf.Struct':'struct','google.protobuf.Value':'struct','google.protobuf.ListValue':'struct','google.protobuf.Timestamp':'timestamp','google.protobuf.Empty':'empty'}
for w in ['Double','Float','Int64','UInt64','Int32','UInt32','Bool','String','Bytes']: WKT[f'google.protobuf.{w}Value'] = 'wrappers'
known = set(msgs) | set(enums)
unresolved = collections.defaultdict(list)
def resolve(scope, t):
    if t in SCALARS: return t, None
    if t in WKT: return '.' + t, 'google/protobuf/%s.proto' % WKT[t]
    parts = scope.split('.')
    for i in range(len(parts), -1, -1):
        cand = '.'.join(parts[:i] + [t])
        if cand in known: return '.' + cand, cand
    unresolved[t].append(scope); return None, None
# package of nested names: longest pkg prefix
def pkg(full): return pkg_of[full]
files = collections.defaultdict(lambda: {'imports': set(), 'items': []})
def file_of_pkg(p): return p.replace('.', '/') + '.proto'
children = collections.defaultdict(list)
for full in list(msgs) + list(enums):
    p = pkg(full); rel = full[len(p)+1:]
    parent = full.rsplit('.', 1)[0]
    if '.' in rel: children[parent].append(full)
    else: files[p]['items'].append(full)
def emit_enum(full, ind):
    out = [f'{ind}enum {full.rsplit(".",1)[1]} {{']
    for n, v in enums[full]: out.append(f'{ind}  {n} = {v};')
    out.append(f'{ind}}}'); return out
def emit_msg(full, ind, p):
    out = [f'{ind}message {full.rsplit(".",1)[1]} {{']
    fields = msgs[full]['fields']; oneofs = collections.OrderedDict(); plain = []
    for f in fields:
        o = next((x[6:] for x in f['flags'] if x.startswith('oneof ')), None)
        (oneofs.setdefault(o, []) if o else plain).append(f)
    def fline(f, ind2, allow_label=True):
        t = f['type']; label = ''
        opts = ' [deprecated = true]' if 'deprecated' in f['flags'] else ''
        mm = re.match(r'map<(\w+),(.+)>', t)
        if mm:
            r, dep = resolve(full, mm.group(2).strip())
            if r is None: return None
            if dep: add_dep(p, dep)
            return f'{ind2}map<{mm.group(1)}, {r}> {f["name"]} = {f["num"]}{opts};'
        if t.startswith('repeated '): label = 'repeated '; t = t[9:]
        r, dep = resolve(full, t)
        if r is None: return None
        if dep: add_dep(p, dep)
        return f'{ind2}{label}{r} {f["name"]} = {f["num"]}{opts};'
    for f in plain:
        l = fline(f, ind + '  ')
        if l: out.append(l)
    for o, fs in oneofs.items():
        out.append(f'{ind}  oneof {o} {{')
        for f in fs:
            l = fline(f, ind + '    ')
            if l: out.append(l)
        out.append(f'{ind}  }}')
    for c in children[full]:
        out += emit_enum(c, ind + '  ') if c in enums else emit_msg(c, ind + '  ', p)
    out.append(f'{ind}}}'); return out
def add_dep(p, dep):
    if dep.startswith('google/'): files[p]['imports'].add(dep); return
    dp = pkg(dep)
    if dp != p: files[p]['imports'].add(file_of_pkg(dp))
outdir = sys.argv[2] if len(sys.argv) > 2 else HERE
for p, f in files.items():
    body = []
    for full in f['items']:
        body += emit_enum(full, '') if full in enums else emit_msg(full, '', p)
        body.append('')
    head = ['// Generated from the reference v2 field tables (formats.md Appendix A) plus proto/extras.md;',
            '// field numbers are the wire contract: never renumber.', 'syntax = "proto3";', '', f'package {p};', '']
    head += [f'import "{i}";' for i in sorted(f['imports'])] + ['']
    path = os.path.join(outdir, file_of_pkg(p)); os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, 'w').write('\n'.join(head + body).rstrip() + '\n')
for t, s in sorted(unresolved.items()): print('UNRESOLVED', t, sorted(set(s))[:3])
