// tb_fixed_cast: exhaustive check of fixed_cast over every input value for
// several (width, frac) -> (width, frac) pairs (floor on fewer fraction bits,
// exact widening, saturation), against a model computed with real numbers:
// clamp(floor(x * 2^(OUT_FRAC - IN_FRAC))).
`timescale 1ns / 1ps
module cast_case #(
    parameter int IW = 8,
    parameter int IF = 4,
    parameter int OW = 8,
    parameter int OF = 4
) (
    output int   checks,
    output int   errors,
    output logic done
);
  logic [IW-1:0] din;
  logic [OW-1:0] dout;
  fixed_cast #(
      .IN_WIDTH(IW), .IN_FRAC_WIDTH(IF), .OUT_WIDTH(OW), .OUT_FRAC_WIDTH(OF)
  ) dut (
      .data_in(din), .data_out(dout)
  );

  function automatic longint model(input longint v);
    real r;
    longint m, lo, hi;
    r = $floor(real'(v) * (2.0 ** (OF - IF)));
    m = longint'(r);
    lo = -(64'sd1 <<< (OW - 1));
    hi = (64'sd1 <<< (OW - 1)) - 1;
    if (m < lo) m = lo;
    if (m > hi) m = hi;
    return m;
  endfunction

  initial begin
    longint lo, hi, want, got;
    checks = 0;
    errors = 0;
    done = 0;
    lo = -(64'sd1 <<< (IW - 1));
    hi = (64'sd1 <<< (IW - 1)) - 1;
    for (longint v = lo; v <= hi; v++) begin
      din = IW'(v);
      #1;
      want = model(v);
      got = longint'($signed(dout));
      checks++;
      if (got != want) begin
        errors++;
        if (errors <= 20)
          $display("MISMATCH cast(%0d,%0d)->(%0d,%0d) x=%0d got=%0d want=%0d", IW, IF, OW, OF, v,
                   got, want);
      end
    end
    done = 1;
  end
endmodule

module tb_fixed_cast;
  `include "tb_report.svh"
  localparam int CASES = 7;
  int checks[CASES], errors[CASES];
  logic done[CASES];

  cast_case #(8, 4, 8, 4) c0 (checks[0], errors[0], done[0]);  // identity
  cast_case #(8, 4, 6, 2) c1 (checks[1], errors[1], done[1]);  // floor + saturate
  cast_case #(8, 2, 12, 5) c2 (checks[2], errors[2], done[2]);  // exact widening
  cast_case #(12, 6, 4, 1) c3 (checks[3], errors[3], done[3]);  // heavy saturation
  cast_case #(6, 1, 12, 0) c4 (checks[4], errors[4], done[4]);  // wider, floor
  cast_case #(18, 6, 8, 3) c5 (checks[5], errors[5], done[5]);  // linear accumulator -> Q5.3
  cast_case #(9, 0, 8, 3) c6 (checks[6], errors[6], done[6]);  // left shift, saturate

  initial begin
    int n, e;
    tb_seed();
    #1;
    wait (done[0] && done[1] && done[2] && done[3] && done[4] && done[5] && done[6]);
    n = 0;
    e = 0;
    for (int i = 0; i < CASES; i++) begin
      n += checks[i];
      e += errors[i];
    end
    tb_finish(n, e);
  end
endmodule
