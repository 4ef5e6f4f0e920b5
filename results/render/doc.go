// Package render draws a record and its analysis (the run's one
// verdict.Analysis, never computed here) for the people who read them:
// the text report and the cover-letter brief (text.go, brieftext.go),
// GitHub Markdown (markdown.go, with every untrusted string escaped by
// mdescape.go), the self-contained HTML page and its charts (html*.go),
// report.json, the benchstat files (benchfmt.go), the aggregate and
// design tables, and the series' table. WriteReports writes a run
// directory's reports, with other stages' parts (the profiles) passed in
// as sections rather than appended to the files afterwards.
package render
