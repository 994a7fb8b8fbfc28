package train

import "time"

// nowFn is the clock Train reads (a variable so tests can fix it).
var nowFn = time.Now
