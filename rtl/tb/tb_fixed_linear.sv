// tb_fixed_linear: fixed_linear fed by two fixed_param_source ROMs
// (weight.dat, bias.dat) and a randomly stalling input driver (x.hex), with
// random output backpressure. Every output lane is compared with y.hex, the
// expected values from the Go integer model (rtl.Linear). Also checks that a
// stalled output beat is held and that no extra beats appear at the end.
// Files (written by Go, one element per line, two's complement hex):
//   x.hex: GROUPS*KB beats of PT*PK lanes, lane r*PK+c
//   y.hex: GROUPS*NB beats of PT*PN lanes, lane r*PN+n
`timescale 1ns / 1ps
module tb_fixed_linear #(
    parameter int IN_W = 8,
    parameter int IN_F = 3,
    parameter int W_W = 8,
    parameter int W_F = 3,
    parameter int B_W = 8,
    parameter int B_F = 3,
    parameter int OUT_W = 8,
    parameter int OUT_F = 3,
    parameter int K = 4,
    parameter int PK = 4,
    parameter int N = 8,
    parameter int PN = 4,
    parameter int PT = 1,
    parameter int GROUPS = 8,
    parameter int P_VALID = 70,  // percent of cycles the driver offers a beat
    parameter int P_READY = 60  // percent of cycles the sink is ready
);
  `include "tb_report.svh"
  localparam int KB = (K + PK - 1) / PK;
  localparam int NB = (N + PN - 1) / PN;
  localparam int IN_L = PT * PK;
  localparam int OUT_L = PT * PN;
  localparam int IN_BEATS = GROUPS * KB;
  localparam int OUT_BEATS = GROUPS * NB;

  logic clk = 0, rst = 1;
  always #5 clk = ~clk;

  logic [IN_W-1:0] x[IN_L-1:0];
  logic [W_W-1:0] w[PN*PK-1:0];
  logic [B_W-1:0] b[PN-1:0];
  logic [OUT_W-1:0] y[OUT_L-1:0];
  logic x_valid = 0, x_ready, w_valid, w_ready, b_valid, b_ready, y_valid, y_ready = 0;

  fixed_param_source #(
      .PRECISION_0(W_W), .TENSOR_SIZE_DIM_0(K), .TENSOR_SIZE_DIM_1(N),
      .PARALLELISM_DIM_0(PK), .PARALLELISM_DIM_1(PN), .INIT_FILE("weight.dat")
  ) weight_source (
      .clk(clk), .rst(rst), .data_out(w), .data_out_valid(w_valid), .data_out_ready(w_ready)
  );
  fixed_param_source #(
      .PRECISION_0(B_W), .TENSOR_SIZE_DIM_0(N), .TENSOR_SIZE_DIM_1(1),
      .PARALLELISM_DIM_0(PN), .PARALLELISM_DIM_1(1), .INIT_FILE("bias.dat")
  ) bias_source (
      .clk(clk), .rst(rst), .data_out(b), .data_out_valid(b_valid), .data_out_ready(b_ready)
  );
  fixed_linear #(
      .DATA_IN_0_PRECISION_0(IN_W), .DATA_IN_0_PRECISION_1(IN_F),
      .DATA_IN_0_TENSOR_SIZE_DIM_0(K), .DATA_IN_0_PARALLELISM_DIM_0(PK),
      .DATA_IN_0_TENSOR_SIZE_DIM_1(GROUPS * PT), .DATA_IN_0_PARALLELISM_DIM_1(PT),
      .WEIGHT_PRECISION_0(W_W), .WEIGHT_PRECISION_1(W_F),
      .WEIGHT_TENSOR_SIZE_DIM_1(N), .WEIGHT_PARALLELISM_DIM_1(PN),
      .BIAS_PRECISION_0(B_W), .BIAS_PRECISION_1(B_F),
      .DATA_OUT_0_PRECISION_0(OUT_W), .DATA_OUT_0_PRECISION_1(OUT_F)
  ) dut (
      .clk(clk), .rst(rst),
      .data_in_0(x), .data_in_0_valid(x_valid), .data_in_0_ready(x_ready),
      .weight(w), .weight_valid(w_valid), .weight_ready(w_ready),
      .bias(b), .bias_valid(b_valid), .bias_ready(b_ready),
      .data_out_0(y), .data_out_0_valid(y_valid), .data_out_0_ready(y_ready)
  );

  logic [IN_W-1:0] xs[IN_BEATS*IN_L];
  logic [OUT_W-1:0] ys[OUT_BEATS*OUT_L];
  logic [OUT_W-1:0] held[OUT_L-1:0];
  logic stalled = 0;
  int sent = 0, got = 0, cycle = 0, done_at = -1;

  initial begin
    tb_seed();
    $readmemh("x.hex", xs);
    $readmemh("y.hex", ys);
  end

  always @(posedge clk) begin
    cycle <= cycle + 1;
    if (cycle == 3) rst <= 0;
    if (!rst) begin
      if (stalled) begin
        if (!y_valid) tb_fail("stalled output beat dropped");
        for (int e = 0; e < OUT_L; e++)
          tb_check("stalled output beat held", longint'(y[e]), longint'(held[e]));
      end
      stalled <= y_valid && !y_ready;
      held <= y;
      if (y_valid && y_ready) begin
        if (got >= OUT_BEATS) tb_fail($sformatf("extra output beat %0d", got));
        else
          for (int e = 0; e < OUT_L; e++)
            tb_check($sformatf("beat %0d lane %0d", got, e), longint'($signed(y[e])),
                     longint'($signed(ys[got*OUT_L+e])));
        got <= got + 1;
        if (got == OUT_BEATS - 1) done_at <= cycle;
      end
      y_ready <= done_at >= 0 || ($urandom % 100) < P_READY;
      if (!x_valid || x_ready) begin
        if (sent < IN_BEATS && ($urandom % 100) < P_VALID) begin
          x_valid <= 1;
          for (int e = 0; e < IN_L; e++) x[e] <= xs[sent*IN_L+e];
          sent <= sent + 1;
        end else x_valid <= 0;
      end
      // 50 idle cycles after the last expected beat catch extra output.
      if (done_at >= 0 && cycle == done_at + 50) tb_finish(tb_checks, tb_errors);
    end
    if (cycle > 200000) begin
      tb_fail($sformatf("timeout: %0d of %0d output beats", got, OUT_BEATS));
      tb_finish(tb_checks, tb_errors);
    end
  end
endmodule
