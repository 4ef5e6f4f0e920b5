package render

// pageHTML is report.html's template: inline CSS, no script, nothing
// fetched from anywhere (TestHTMLSelfContained).
const pageHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>kci run {{.ID}}</title>
<style>
body{font-family:"Liberation Sans",Arial,Helvetica,sans-serif;margin:1.5em;color:#222;max-width:1400px}
h1{font-size:1.4em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}
.brief{background:#f6f8fa;border:1px solid #d0d7de;padding:.6em 1em;border-radius:6px}
.brief li{margin:.2em 0}.brief ul ul{color:#555}
.charts{display:flex;flex-wrap:wrap;gap:.8em}
figure{margin:0;border:1px solid #ddd;border-radius:4px;padding:.3em}
figure.faster{border-color:#2da44e;border-width:2px}figure.slower{border-color:#cf222e;border-width:2px}
figcaption{font-size:.85em;max-width:320px}
table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}
td.ok{background:#dafbe1}td.fail{background:#ffebe9}td.none{background:#eee}
tr.regression td{font-weight:bold;color:#cf222e}tr.fixed td{font-weight:bold;color:#1a7f37}
.legend,.meta{color:#555;font-size:.85em}.key{font-size:.85em}
.badge{font-size:.75em;padding:.1em .4em;border-radius:3px;color:#fff;background:#6e7781}
.badge.faster{background:#1a7f37}.badge.slower,.badge.failure{background:#cf222e}
.cause{margin:.3em 0}details.unchanged{margin-top:.6em}details.unchanged summary{cursor:pointer;color:#555}
.key .b{color:#4c72b0}.key .p{color:#dd8452}
p.unit{color:#555;font-size:.85em;margin:.8em 0 .3em}
</style></head><body>
<h1>kci run {{.ID}}</h1>
<p class="meta">{{.Times}} · {{.Host}}</p>
<div class="brief" id="brief">
{{if .Cause}}<p class="cause" id="cause"><strong>{{.CauseLabel}}:</strong> {{.Cause}}</p>{{end}}
{{with .Briefs}}<ul>
{{range .}}<li class="tree-brief" data-tree="{{.Tree}}">{{if .Badge}}<span class="badge {{.BadgeClass}}">{{.Badge}}</span> {{end}}<strong>{{.Headline}}</strong>
{{with details .}}<ul>{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}</li>
{{end}}</ul>{{end}}</div>
{{with .Key}}<p class="key">Dots: one per boot, {{range $i, $k := .}}{{if $i}} and {{end}}<span class="{{$k.Class}}">● {{$k.Name}}</span>{{end}};
the bar beside them is the interval and its tick the median.</p>{{end}}
{{range $tree := .Trees}}
<section class="tree" id="tree-{{.Name}}">
<h2>tree {{.Name}}</h2>
{{if .Kernels}}<p class="meta">kernels: {{.Kernels}}</p>{{end}}
{{with .Patches}}<ul class="patches meta">{{range .}}<li>patch: {{.}}</li>{{end}}</ul>{{end}}
{{if .Config}}<p class="meta">{{.Config}}</p>{{end}}
{{range .Rows}}{{template "charts" .}}{{end}}{{with .Folded}}<details class="unchanged"><summary>{{$tree.FoldedN}} rows without a decided change</summary>
{{range .}}{{template "charts" .}}{{end}}</details>{{end}}
<p class="legend">{{.Legend}}</p>
{{with .Where}}<h3>Where it changed</h3><p class="meta">{{.Heading}}</p>
{{if .Rows}}<table class="where"><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}{{with .Note}}<p class="meta">{{.}}</p>{{end}}{{end}}{{with .Coverage}}<h3>The patch's code in the measured windows</h3><ul class="coverage">{{range .}}<li>{{.}}</li>{{end}}</ul>
{{end}}
{{with .Excluded}}<h3>Not in the statistics</h3><ul>{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Survival}}<h3>Survival (base → patched)</h3>
<table class="survival"><tr><th>carrier</th><th>path</th><th>expected</th><th>base</th><th>patched</th><th>change</th></tr>
{{range .Survival}}<tr class="{{.Change}}"><td>{{.Carrier}}</td><td>{{.Path}}</td><td>{{if .Patched}}{{.Patched.Expected}}{{else if .Base}}{{.Base.Expected}}{{end}}</td>
<td class="cell {{cellClass .Base}}">{{cell .Base}}</td><td class="cell {{cellClass .Patched}}">{{cell .Patched}}</td><td>{{.Change}}</td></tr>
{{end}}</table>{{end}}
</section>
{{end}}
{{if .Boots}}<h2>Boots</h2>
{{.BootChart}}
<table class="boots"><tr><th>boot</th><th>tree</th><th>kernel</th><th>rep</th><th>seed</th><th>clock</th><th>boot to ready</th><th>error</th></tr>
{{range .Boots}}<tr><td>{{.Seq}}</td><td>{{.Tree}}</td><td>{{.Role}}</td><td>{{.Rep}}</td><td>{{.Seed}}</td><td>{{.Clock}}</td><td>{{.Ready}}</td><td>{{.Error}}</td></tr>
{{end}}</table>{{end}}
{{if .Phases}}<h2>Phases</h2>
<table class="phases"><tr><th>phase</th><th>tree</th><th>kernel</th><th>duration</th></tr>
{{range .Phases}}<tr><td>{{.Name}}</td><td>{{.Tree}}</td><td>{{.Kernel}}</td><td>{{.Duration}}</td></tr>
{{end}}</table>{{end}}
{{if .Flames}}<h2>Flame graphs</h2><ul class="flames">
{{range .Flames}}<li><a href="{{.}}">{{.}}</a></li>{{end}}</ul>{{end}}
</body></html>
{{define "charts"}}<p class="unit">{{.Unit}}{{with .Note}} ({{.}}){{end}}</p>
<div class="charts" data-unit="{{.Unit}}">
{{range .Rows}}{{template "figure" .}}{{end}}</div>
{{end}}{{define "figure"}}<figure class="row {{.Class}}" data-row="{{.Label}}" data-base-boots="{{.BaseN}}" data-patched-boots="{{.PatchedN}}">
{{.Chart}}
<figcaption><strong>{{.Label}}</strong>: {{.Change}}, {{.BaseN}}+{{.PatchedN}} boots, {{.Verdict}}</figcaption>
</figure>
{{end}}`
