// Package bundletest holds the real tasks that prove each bundled Python
// package works in the sandbox (runtimes/python/bundle.sh), shared by the
// runtime's tests and the end-to-end tests (capsule exec, MCP). Only tests
// import it.
package bundletest

import (
	"encoding/json"
	"reflect"
	"strings"
)

// Task is one piece of work done with bundled packages: Code's last
// expression must give Result (JSON, as the runtime renders it).
type Task struct {
	// Name says what the task proves.
	Name string
	// Modules are the bundled modules the task imports.
	Modules []string
	Code    string
	Result  string
}

// Done reports whether result, JSON as the runtime, the MCP tool or
// `capsule exec` gives it, is the task's Result: the same value, however
// it is spelled (1.0 or 1, "<" or "\u003c").
func (t Task) Done(result []byte) bool {
	var got, want any
	if json.Unmarshal(result, &got) != nil || json.Unmarshal([]byte(t.Result), &want) != nil {
		return false
	}
	return reflect.DeepEqual(got, want)
}

// PrintingJSON is Code with its last expression printed as JSON instead,
// for `capsule exec`, which shows a result as the REPL would. The last
// expression is the last line that starts at the first column, with the
// indented lines after it.
func (t Task) PrintingJSON() string {
	lines := strings.Split(t.Code, "\n")
	i := len(lines) - 1
	for i > 0 && strings.HasPrefix(lines[i], " ") {
		i--
	}
	return strings.Join(lines[:i], "\n") + "\nimport json as _json\nprint(_json.dumps(" + strings.Join(lines[i:], "\n") + "))"
}

// Tasks covers every bundled module at least once.
var Tasks = []Task{
	{
		Name:    "sympy solves and integrates",
		Modules: []string{"sympy", "mpmath"},
		Code: `import sympy as sp
x = sp.Symbol("x")
roots = sp.solve(x**2 - 5*x + 6, x)
[sorted(int(r) for r in roots), str(sp.integrate(x * sp.exp(x), x)),
 str(sp.integrate(sp.sin(x)**2, (x, 0, sp.pi))), str(sp.N(sp.pi, 30))]`,
		Result: `[[2,3],"(x - 1)*exp(x)","pi/2","3.14159265358979323846264338328"]`,
	},
	{
		Name:    "networkx finds a shortest path and ranks pages",
		Modules: []string{"networkx"},
		Code: `import networkx as nx
G = nx.DiGraph()
G.add_weighted_edges_from([("a", "b", 1), ("b", "c", 2), ("a", "c", 5), ("c", "d", 1), ("d", "a", 1)])
rank = nx.pagerank(G)
hubs, authorities = nx.hits(G)
[nx.shortest_path(G, "a", "d", weight="weight"), nx.shortest_path_length(G, "a", "d", weight="weight"),
 max(rank, key=rank.get), round(sum(rank.values()), 6), round(sum(authorities.values()), 6)]`,
		Result: `[["a","b","c","d"],4,"c",1.0,1.0]`,
	},
	{
		Name:    "dateutil and pytz parse, shift and format dates",
		Modules: []string{"dateutil", "pytz"},
		Code: `from dateutil import parser, relativedelta, tz
import pytz
d = parser.parse("March 10, 2024 1:30 AM")
local = pytz.timezone("America/New_York").localize(d)
later = local + relativedelta.relativedelta(months=+1, days=+2)
[local.isoformat(), later.strftime("%Y-%m-%d %a"), local.astimezone(pytz.timezone("Europe/Paris")).strftime("%H:%M %Z"),
 str(tz.gettz("Asia/Tokyo").utcoffset(d)), parser.isoparse("2024-07-01T12:00:00+02:00").utcoffset().seconds]`,
		Result: `["2024-03-10T01:30:00-05:00","2024-04-12 Fri","07:30 CET","9:00:00",7200]`,
	},
	{
		Name:    "PyYAML round-trips a document with its pure-Python code",
		Modules: []string{"yaml"},
		Code: `import yaml
doc = {"name": "capsule", "tags": ["a", "b"], "n": 3, "nested": {"x": 1.5, "on": True}}
text = yaml.safe_dump(doc, sort_keys=True)
[yaml.safe_load(text) == doc, yaml.__with_libyaml__, text.splitlines()[0]]`,
		Result: `[true,false,"n: 3"]`,
	},
	{
		Name:    "tomli reads TOML",
		Modules: []string{"tomli"},
		Code: `import tomli
t = tomli.loads('title = "T"\n[owner]\nname = "Tom"\ndob = 1979-05-27\n[[items]]\nn = 1\n[[items]]\nn = 2\n')
[t["owner"]["name"], str(t["owner"]["dob"]), [i["n"] for i in t["items"]]]`,
		Result: `["Tom","1979-05-27",[1,2]]`,
	},
	{
		Name:    "markdown renders HTML, with an extension named by its entry point",
		Modules: []string{"markdown"},
		Code: `import markdown
markdown.markdown("# Title\n\nSome *text*.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n", extensions=["tables"])`,
		Result: `"<h1>Title</h1>\n<p>Some <em>text</em>.</p>\n<table>\n<thead>\n<tr>\n<th>a</th>\n<th>b</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td>1</td>\n<td>2</td>\n</tr>\n</tbody>\n</table>"`,
	},
	{
		Name:    "jinja2 renders an escaping template",
		Modules: []string{"jinja2", "markupsafe"},
		Code: `import jinja2, markupsafe
env = jinja2.Environment(autoescape=True)
t = env.from_string("{% for u in users %}<li>{{ u.name|title }}</li>{% endfor %}")
[t.render(users=[{"name": "ann <b>"}, {"name": "bob"}]), str(markupsafe.escape("<&>"))]`,
		Result: `["<li>Ann &lt;B&gt;</li><li>Bob</li>","&lt;&amp;&gt;"]`,
	},
	{
		// The last row's cells are not closed: html5lib repairs them as a
		// browser does, Python's html.parser nests them.
		Name:    "beautifulsoup scrapes a table with each parser",
		Modules: []string{"bs4", "soupsieve", "html5lib", "webencodings"},
		Code: `from bs4 import BeautifulSoup
page = """<html><body><table id="t"><tr><th>name</th><th>qty</th></tr>
<tr><td>apple</td><td>3</td></tr><tr><td>pear<td>5</table></body></html>"""
[[[c.get_text() for c in tr.find_all(["td", "th"])] for tr in BeautifulSoup(page, p).select("table#t tr")]
 for p in ("html.parser", "html5lib")]`,
		Result: `[[["name","qty"],["apple","3"],["pear5","5"]],[["name","qty"],["apple","3"],["pear","5"]]]`,
	},
	{
		Name:    "openpyxl writes an .xlsx to /tmp and reads it back",
		Modules: []string{"openpyxl", "et_xmlfile"},
		Code: `import openpyxl
wb = openpyxl.Workbook()
ws = wb.active
ws.title = "Data"
ws.append(["item", "price"])
for row in [("a", 1.5), ("b", 2.25)]:
    ws.append(row)
ws["C2"] = "=SUM(B2:B3)"
wb.save("/tmp/report.xlsx")
back = openpyxl.load_workbook("/tmp/report.xlsx")
[[c.value for c in row] for row in back["Data"].iter_rows()]`,
		Result: `[["item","price",null],["a",1.5,"=SUM(B2:B3)"],["b",2.25,null]]`,
	},
	{
		Name:    "pypdf writes a one-page PDF to /tmp and reads its text back",
		Modules: []string{"pypdf"},
		Code: `from pypdf import PdfReader, PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject
w = PdfWriter()
page = w.add_blank_page(width=612, height=792)
font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                         NameObject("/BaseFont"): NameObject("/Helvetica")})
page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): DictionaryObject({NameObject("/F1"): w._add_object(font)})})
content = DecodedStreamObject()
content.set_data(b"BT /F1 24 Tf 72 720 Td (Hello from capsule) Tj ET")
page[NameObject("/Contents")] = w._add_object(content)
w.add_metadata({"/Title": "capsule test"})
with open("/tmp/one.pdf", "wb") as f:
    w.write(f)
r = PdfReader("/tmp/one.pdf")
[len(r.pages), float(r.pages[0].mediabox.width), str(r.metadata.title), str(r.pages[0].extract_text())]`,
		Result: `[1,612.0,"capsule test","Hello from capsule"]`,
	},
	{
		Name:    "pypng writes a PNG to /tmp and reads it back",
		Modules: []string{"png"},
		Code: `import png
rows = [[(x * 16 + y) % 256 for x in range(16)] for y in range(8)]
png.from_array(rows, "L").save("/tmp/g.png")
width, height, pixels, info = png.Reader(filename="/tmp/g.png").read()
[width, height, [list(r) for r in pixels] == rows, info["greyscale"], open("/tmp/g.png", "rb").read(4) == b"\x89PNG"]`,
		Result: `[16,8,true,true,true]`,
	},
	{
		Name:    "tabulate lays out a table",
		Modules: []string{"tabulate"},
		Code: `from tabulate import tabulate
tabulate([["apple", 3, 1.5], ["pear", 12, 0.25]], headers=["fruit", "qty", "price"], tablefmt="github")`,
		Result: `"| fruit   |   qty |   price |\n|---------|-------|---------|\n| apple   |     3 |    1.5  |\n| pear    |    12 |    0.25 |"`,
	},
	{
		Name:    "the small utilities work",
		Modules: []string{"more_itertools", "sortedcontainers", "toolz", "tlz", "attr", "attrs", "pyparsing", "chardet", "six"},
		Code: `import more_itertools, sortedcontainers, toolz, tlz, attr, attrs, pyparsing, chardet, six
@attrs.define
class Point:
    x: int
    y: int = attr.ib(default=0)
number = pyparsing.Word(pyparsing.nums).set_parse_action(lambda t: int(t[0]))
expr = number + pyparsing.Suppress("+") + number
[list(more_itertools.chunked(range(5), 2)), list(sortedcontainers.SortedList([3, 1, 2])),
 toolz.frequencies("abca"), tlz.pipe(3, lambda v: v * 2), attr.asdict(Point(1)), sum(expr.parse_string("40 + 2")),
 chardet.detect("Grüße aus Köln, schöne Grüße".encode("utf-8"))["encoding"], six.text_type is str]`,
		Result: `[[[0,1],[2,3],[4]],[1,2,3],{"a":2,"b":1,"c":1},6,{"x":1,"y":0},42,"utf-8",true]`,
	},
	{
		Name:    "numpy solves, inverts and decomposes (numpy.linalg without BLAS)",
		Modules: []string{"numpy"},
		Code: `import numpy as np
a = np.array([[3.0, 1.0], [1.0, 2.0]])
x = np.linalg.solve(a, np.array([9.0, 8.0]))
[x.round(12).tolist(), round(float(np.linalg.det(a)), 9), bool(np.allclose(a @ np.linalg.inv(a), np.eye(2))),
 np.linalg.eigvalsh(a).round(6).tolist(), np.linalg.svd(a, compute_uv=False).round(6).tolist(),
 np.linalg.lstsq(np.array([[1.0, 0], [1, 1], [1, 2]]), np.array([1.0, 3, 5]), rcond=None)[0].round(9).tolist()]`,
		Result: `[[2.0,3.0],5.0,true,[1.381966,3.618034],[3.618034,1.381966],[1.0,2.0]]`,
	},
	{
		Name:    "numpy finds a signal's frequency with an FFT, on default_rng's reproducible stream",
		Modules: []string{"numpy"},
		Code: `import numpy as np
rng = np.random.default_rng(12345)
t = np.arange(256) / 256
signal = np.sin(2 * np.pi * 10 * t) + 0.1 * rng.standard_normal(256)
[int(np.argmax(np.abs(np.fft.rfft(signal)))), np.random.default_rng(42).integers(0, 1000, 5).tolist(),
 np.fft.ifft(np.fft.fft([1.0, 2, 3, 4])).real.round(12).tolist()]`,
		Result: `[10,[89,773,654,438,433],[1.0,2.0,3.0,4.0]]`,
	},
	{
		Name:    "numpy fits a polynomial, takes percentiles and histograms, sums with einsum",
		Modules: []string{"numpy"},
		Code: `import numpy as np
x = np.array([0.0, 1, 2, 3, 4])
y = 2 * x**2 - 3 * x + 1
[np.polyfit(x, y, 2).round(9).tolist(), float(np.percentile(y, 50)), np.histogram([1, 2, 2, 3, 3, 3], bins=3)[0].tolist(),
 float(np.einsum("ij,ij->", np.ones((2, 3)), np.full((2, 3), 2.0)))]`,
		Result: `[[2.0,-3.0,1.0],3.0,[1,2,3],12.0]`,
	},
	{
		Name:    "numpy broadcasts, sorts, indexes and counts days",
		Modules: []string{"numpy"},
		Code: `import numpy as np
m = np.arange(12).reshape(3, 4)
{"row": (m * 2 + np.array([1, 0, 0, 0]))[1].tolist(), "sorted": np.sort(np.array([3, 1, 2]))[::-1].tolist(),
 "unique": np.unique([3, 1, 3, 2, 1]).tolist(), "fancy": m[[0, 2], 1:3].tolist(), "masked": m[m % 5 == 0].tolist(),
 "days": int((np.datetime64("2024-03-01") - np.datetime64("2024-02-01")).astype(int)),
 "next": str(np.datetime64("2024-01-31") + np.timedelta64(1, "D")), "sums": m.sum(axis=0).tolist(),
 "mean": float(m.mean()), "flag": bool(np.bool_(True))}`,
		Result: `{"row":[9,10,12,14],"sorted":[3,2,1],"unique":[1,2,3],"fancy":[[1,2],[9,10]],"masked":[0,5,10],"days":29,"next":"2024-02-01","sums":[12,15,18,21],"mean":5.5,"flag":true}`,
	},
}
