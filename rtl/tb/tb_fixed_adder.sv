// tb_fixed_adder: fixed_adder against the Go integer model (rtl.Add). Two
// drivers offer the beats of a.hex and b.hex independently, each with its
// own random valid, and the sink takes output beats with random ready; every
// lane of every output beat is compared with y.hex (rtl.AdderCase.Files:
// one element per line, two's complement hex). Also checks that a stalled
// output beat is held and that no beat is lost or extra.
// Parameters by -G (rtl.AdderCase.Testbench).
`timescale 1ns / 1ps
module tb_fixed_adder #(
    parameter int W0 = 8,
    parameter int F0 = 3,
    parameter int W1 = 8,
    parameter int F1 = 3,
    parameter int OW = 8,
    parameter int OF = 3,
    parameter int P0 = 4,
    parameter int P1 = 1,
    parameter int BEATS = 64,
    parameter int P_VALID = 70,  // percent of cycles each driver offers a beat
    parameter int P_READY = 60  // percent of cycles the sink is ready
);
  `include "tb_report.svh"
  localparam int L = P0 * P1;

  logic clk = 0, rst = 1;
  always #5 clk = ~clk;

  logic [W0-1:0] a[L-1:0];
  logic [W1-1:0] b[L-1:0];
  logic [OW-1:0] y[L-1:0];
  logic a_valid = 0, a_ready, b_valid = 0, b_ready, y_valid, y_ready = 0;

  fixed_adder #(
      .DATA_IN_0_PRECISION_0(W0), .DATA_IN_0_PRECISION_1(F0),
      .DATA_IN_0_TENSOR_SIZE_DIM_0(P0), .DATA_IN_0_PARALLELISM_DIM_0(P0),
      .DATA_IN_0_TENSOR_SIZE_DIM_1(P1), .DATA_IN_0_PARALLELISM_DIM_1(P1),
      .DATA_IN_1_PRECISION_0(W1), .DATA_IN_1_PRECISION_1(F1),
      .DATA_OUT_0_PRECISION_0(OW), .DATA_OUT_0_PRECISION_1(OF)
  ) dut (
      .clk(clk), .rst(rst),
      .data_in_0(a), .data_in_0_valid(a_valid), .data_in_0_ready(a_ready),
      .data_in_1(b), .data_in_1_valid(b_valid), .data_in_1_ready(b_ready),
      .data_out_0(y), .data_out_0_valid(y_valid), .data_out_0_ready(y_ready)
  );

  logic [W0-1:0] as[BEATS*L];
  logic [W1-1:0] bs[BEATS*L];
  logic [OW-1:0] ys[BEATS*L];
  logic [OW-1:0] held[L-1:0];
  logic stalled = 0;
  int a_sent = 0, b_sent = 0, got = 0, cycle = 0, done_at = -1;

  initial begin
    tb_seed();
    $readmemh("a.hex", as);
    $readmemh("b.hex", bs);
    $readmemh("y.hex", ys);
  end

  always @(posedge clk) begin
    cycle <= cycle + 1;
    if (cycle == 3) rst <= 0;
    if (!rst) begin
      if (stalled) begin
        if (!y_valid) tb_fail("stalled output beat dropped");
        for (int e = 0; e < L; e++) tb_check("stalled output beat held", longint'(y[e]), longint'(held[e]));
      end
      stalled <= y_valid && !y_ready;
      held <= y;
      if (y_valid && y_ready) begin
        if (got >= BEATS) tb_fail($sformatf("extra output beat %0d", got));
        else
          for (int e = 0; e < L; e++)
            tb_check($sformatf("beat %0d lane %0d a=%0d b=%0d", got, e, $signed(as[got*L+e]), $signed(bs[got*L+e])),
                     longint'($signed(y[e])), longint'($signed(ys[got*L+e])));
        got <= got + 1;
        if (got == BEATS - 1) done_at <= cycle;
      end
      y_ready <= done_at >= 0 || ($urandom % 100) < P_READY;
      if (!a_valid || a_ready) begin
        if (a_sent < BEATS && ($urandom % 100) < P_VALID) begin
          a_valid <= 1;
          for (int e = 0; e < L; e++) a[e] <= as[a_sent*L+e];
          a_sent <= a_sent + 1;
        end else a_valid <= 0;
      end
      if (!b_valid || b_ready) begin
        if (b_sent < BEATS && ($urandom % 100) < P_VALID) begin
          b_valid <= 1;
          for (int e = 0; e < L; e++) b[e] <= bs[b_sent*L+e];
          b_sent <= b_sent + 1;
        end else b_valid <= 0;
      end
      // 50 idle cycles after the last expected beat catch extra output.
      if (done_at >= 0 && cycle == done_at + 50) tb_finish(tb_checks, tb_errors);
    end
    if (cycle > 100 * BEATS + 10000) begin
      tb_fail($sformatf("timeout: %0d of %0d output beats", got, BEATS));
      tb_finish(tb_checks, tb_errors);
    end
  end
endmodule
