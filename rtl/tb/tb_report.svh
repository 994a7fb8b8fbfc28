// tb_report.svh: result protocol shared by the testbenches (included inside a
// module). The Go driver (package rtl) parses these lines:
//   MISMATCH <what> got=<g> want=<w>    one per failed check (first 50 shown)
//   PASS checks=<n>                      all checks passed
//   FAIL checks=<n> mismatches=<m>       at least one check failed
int tb_checks = 0;
int tb_errors = 0;

task automatic tb_check(input string what, input longint got, input longint want);
  tb_checks++;
  if (got != want) begin
    tb_errors++;
    if (tb_errors <= 50) $display("MISMATCH %s got=%0d want=%0d", what, got, want);
  end
endtask

task automatic tb_fail(input string what);
  tb_errors++;
  if (tb_errors <= 50) $display("MISMATCH %s", what);
endtask

task automatic tb_seed;
  int seed;
  if ($value$plusargs("seed=%d", seed)) seed = $urandom(seed);
endtask

task automatic tb_finish(input int checks, input int errors);
  if (errors == 0 && checks > 0) $display("PASS checks=%0d", checks);
  else $display("FAIL checks=%0d mismatches=%0d", checks, errors);
  $finish;
endtask
