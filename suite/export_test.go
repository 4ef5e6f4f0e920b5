package suite

// Exported for the guest test (package suite_test), which boots a VM and
// so lives outside the package.
var (
	CheckStockRun = checkStockRun
	CheckRun      = checkRun
	StockWant     = stockWant
	ExtWant       = extWant
	GtpWant       = gtpWant
	TestPlanSmall = testPlan
)

type RunWant = runWant
