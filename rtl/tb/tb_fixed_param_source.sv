// tb_fixed_param_source: streams a ROM (rom.dat, MASE *_rom.dat format,
// written by Go) with random backpressure for several wraps, and checks every
// lane of every beat against the element list elems.hex (one element per
// line, in tensor order, zero padded), plus that a stalled beat is held.
`timescale 1ns / 1ps
module tb_fixed_param_source #(
    parameter int W = 8,
    parameter int T0 = 6,
    parameter int T1 = 5,
    parameter int P0 = 3,
    parameter int P1 = 2
);
  `include "tb_report.svh"
  localparam int L = P0 * P1;
  localparam int DEPTH = ((T0 + P0 - 1) / P0) * ((T1 + P1 - 1) / P1);
  localparam int BEATS = 5 * DEPTH + 3;

  logic clk = 0, rst = 1;
  always #5 clk = ~clk;

  logic [W-1:0] data[L-1:0];
  logic valid, ready = 0;
  fixed_param_source #(
      .PRECISION_0(W), .TENSOR_SIZE_DIM_0(T0), .TENSOR_SIZE_DIM_1(T1),
      .PARALLELISM_DIM_0(P0), .PARALLELISM_DIM_1(P1), .INIT_FILE("rom.dat")
  ) dut (
      .clk(clk), .rst(rst), .data_out(data), .data_out_valid(valid), .data_out_ready(ready)
  );

  logic [W-1:0] elems[DEPTH*L];
  logic [W-1:0] held[L-1:0];
  logic stalled = 0;
  int got = 0, cycle = 0;

  initial begin
    tb_seed();
    $readmemh("elems.hex", elems);
  end

  always @(posedge clk) begin
    cycle <= cycle + 1;
    if (cycle == 3) rst <= 0;
    if (!rst) begin
      if (stalled) begin
        if (!valid) tb_fail("stalled beat dropped");
        for (int e = 0; e < L; e++) tb_check("stalled beat held", longint'(data[e]), longint'(held[e]));
      end
      stalled <= valid && !ready;
      held <= data;
      if (valid && ready) begin
        for (int e = 0; e < L; e++)
          tb_check($sformatf("beat %0d lane %0d", got, e), longint'(data[e]),
                   longint'(elems[(got%DEPTH)*L+e]));
        got <= got + 1;
        if (got == BEATS - 1) tb_finish(tb_checks, tb_errors);
      end
      ready <= ($urandom % 3) != 0;
    end
    if (cycle > 10000) begin
      tb_fail("timeout");
      tb_finish(tb_checks, tb_errors);
    end
  end
endmodule
