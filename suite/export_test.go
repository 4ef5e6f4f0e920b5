package suite

// Exported for the guest test (package suite_test), which boots a VM and
// so lives outside the package.
var (
	CheckStockRun = checkStockRun
	TestPlanSmall = testPlan
)
