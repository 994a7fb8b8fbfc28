// fixed_gelu: lane-wise integer GELU on a valid/ready stream, zero latency.
//
// I-BERT's i-GELU: GELU(x) ≈ x · ½ · (1 + L(x/√2)), L(u) = sgn(u) · (a ·
// (min(|u|, −b) + b)² + 1), a = −0.2888, b = −1.769, on integers: the
// constants have 16 fraction bits (1/√2 = 46341, −b = 115933, −a = 18927)
// and each step floors at a fixed place, exactly as the Go model rtl.GELU:
//   m = |x|; u = (m·46341) >> IN_F; e = 115933 − min(u, 115933)
//   p = (18927 · ((e·e) >> 16)) >> 16; l = 2^16 − p
//   h = 2^16 + sgn(x)·l; y = (x·h) >>> 17, then cast to DATA_OUT_0.
// Its largest error against float GELU is about 0.025 plus the output's
// rounding (rtl's TestGELUModel). Valid goes forwards and ready backwards
// unchanged.
`timescale 1ns / 1ps
module fixed_gelu #(
    parameter int DATA_IN_0_PRECISION_0       = 8,
    parameter int DATA_IN_0_PRECISION_1       = 4,
    parameter int DATA_IN_0_TENSOR_SIZE_DIM_0 = 8,
    parameter int DATA_IN_0_PARALLELISM_DIM_0 = 4,
    parameter int DATA_IN_0_TENSOR_SIZE_DIM_1 = 1,
    parameter int DATA_IN_0_PARALLELISM_DIM_1 = 1,

    parameter int INPLACE = 0,

    parameter int DATA_OUT_0_PRECISION_0       = DATA_IN_0_PRECISION_0,
    parameter int DATA_OUT_0_PRECISION_1       = DATA_IN_0_PRECISION_1,
    parameter int DATA_OUT_0_TENSOR_SIZE_DIM_0 = DATA_IN_0_TENSOR_SIZE_DIM_0,
    parameter int DATA_OUT_0_PARALLELISM_DIM_0 = DATA_IN_0_PARALLELISM_DIM_0,
    parameter int DATA_OUT_0_TENSOR_SIZE_DIM_1 = DATA_IN_0_TENSOR_SIZE_DIM_1,
    parameter int DATA_OUT_0_PARALLELISM_DIM_1 = DATA_IN_0_PARALLELISM_DIM_1
) (
    // Waiver: clk/rst exist for a uniform component interface; the stage is
    // combinational.
    /* verilator lint_off UNUSEDSIGNAL */
    input  logic                              clk,
    input  logic                              rst,
    /* verilator lint_on UNUSEDSIGNAL */
    input  logic [ DATA_IN_0_PRECISION_0-1:0] data_in_0       [DATA_IN_0_PARALLELISM_DIM_0*DATA_IN_0_PARALLELISM_DIM_1-1:0],
    input  logic                              data_in_0_valid,
    output logic                              data_in_0_ready,
    output logic [DATA_OUT_0_PRECISION_0-1:0] data_out_0      [DATA_OUT_0_PARALLELISM_DIM_0*DATA_OUT_0_PARALLELISM_DIM_1-1:0],
    output logic                              data_out_0_valid,
    input  logic                              data_out_0_ready
);
  localparam int LANES = DATA_IN_0_PARALLELISM_DIM_0 * DATA_IN_0_PARALLELISM_DIM_1;
  localparam int IN_W = DATA_IN_0_PRECISION_0;
  localparam int IN_F = DATA_IN_0_PRECISION_1;
  localparam int C = 16;  // fraction bits of the constants and of L
  localparam int M_W = IN_W + 1;  // |x|, which for the most negative x needs a bit more
  localparam int U_W = M_W + 16;  // m · 46341 (46341 < 2^16)
  localparam int E_W = 17;  // e ≤ 115933 < 2^17
  localparam int H_W = C + 3;  // h ∈ [0, 2^17], signed
  localparam int Y_W = IN_W + H_W;  // x · h
  localparam logic [U_W-1:0] INV_SQRT2 = U_W'(46341);
  localparam logic [E_W-1:0] B = E_W'(115933);
  localparam logic [2*E_W-1:0] A = (2 * E_W)'(18927);

`ifndef SYNTHESIS
  initial begin
    if (DATA_OUT_0_PARALLELISM_DIM_0 * DATA_OUT_0_PARALLELISM_DIM_1 != LANES)
      $fatal(1, "fixed_gelu: DATA_OUT_0 parallelism must match DATA_IN_0");
  end
`endif

  for (genvar i = 0; i < LANES; i++) begin : g_lane
    logic signed [M_W-1:0] xe;
    logic [M_W-1:0] m;
    logic [U_W-1:0] u;
    logic [E_W-1:0] e;
    logic [2*E_W-1:0] e2;
    logic [E_W:0] p;  // ≤ 0.2888 · 1.769² · 2^16 = 59225
    logic signed [H_W-1:0] l, h;
    logic signed [Y_W-1:0] y;
    assign xe = M_W'($signed(data_in_0[i]));
    assign m  = xe[M_W-1] ? M_W'(-xe) : M_W'(xe);
    assign u  = (U_W'(m) * INV_SQRT2) >> IN_F;
    assign e  = (u > U_W'(B)) ? '0 : B - E_W'(u);
    assign e2 = ((2 * E_W)'(e) * (2 * E_W)'(e)) >> C;
    assign p  = (E_W + 1)'((A * e2) >> C);
    assign l  = H_W'(1 << C) - H_W'(p);
    always_comb begin
      if (xe > 0) h = H_W'(1 << C) + l;
      else if (xe < 0) h = H_W'(1 << C) - l;
      else h = H_W'(1 << C);
    end
    assign y = (Y_W'($signed(data_in_0[i])) * Y_W'(h)) >>> (C + 1);
    fixed_cast #(
        .IN_WIDTH      (Y_W),
        .IN_FRAC_WIDTH (IN_F),
        .OUT_WIDTH     (DATA_OUT_0_PRECISION_0),
        .OUT_FRAC_WIDTH(DATA_OUT_0_PRECISION_1)
    ) cast_inst (
        .data_in (y),
        .data_out(data_out_0[i])
    );
  end

  assign data_out_0_valid = data_in_0_valid;
  assign data_in_0_ready  = data_out_0_ready;

  // Waiver: tensor sizes and INPLACE are part of MASE's parameter interface;
  // a lane-wise stage needs neither.
  /* verilator lint_off UNUSEDPARAM */
  localparam int UNUSED = INPLACE + DATA_IN_0_TENSOR_SIZE_DIM_0 + DATA_IN_0_TENSOR_SIZE_DIM_1
      + DATA_OUT_0_TENSOR_SIZE_DIM_0 + DATA_OUT_0_TENSOR_SIZE_DIM_1;
  /* verilator lint_on UNUSEDPARAM */
endmodule
