// fixed_leaky_relu: lane-wise Leaky ReLU on a valid/ready stream, zero latency.
//
// The negative slope is the fixed-point number NEGATIVE_SLOPE_VALUE /
// 2^NEGATIVE_SLOPE_PRECISION_1, NEGATIVE_SLOPE_VALUE being a signed integer of
// NEGATIVE_SLOPE_PRECISION_0 bits. For x < 0 the exact product slope*x (with
// IN_FRAC + SLOPE_FRAC fraction bits) is formed; x >= 0 passes unchanged. The
// result is cast once to DATA_OUT_0 with floor rounding and saturation, so with
// equal in/out formats y = (VALUE * x) >>> SLOPE_FRAC for x < 0
// (Q(8,4), slope 1/16: -64 -> -4, -1 -> -1). All P0*P1 lanes are processed.
`timescale 1ns / 1ps
module fixed_leaky_relu #(
    parameter int DATA_IN_0_PRECISION_0       = 8,
    parameter int DATA_IN_0_PRECISION_1       = 4,
    parameter int DATA_IN_0_TENSOR_SIZE_DIM_0 = 8,
    parameter int DATA_IN_0_PARALLELISM_DIM_0 = 4,
    parameter int DATA_IN_0_TENSOR_SIZE_DIM_1 = 1,
    parameter int DATA_IN_0_PARALLELISM_DIM_1 = 1,

    parameter int INPLACE = 0,

    parameter int NEGATIVE_SLOPE_PRECISION_0 = 8,
    parameter int NEGATIVE_SLOPE_PRECISION_1 = 4,
    parameter int NEGATIVE_SLOPE_VALUE       = 1,

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
  localparam int S_W = NEGATIVE_SLOPE_PRECISION_0;
  localparam int S_F = NEGATIVE_SLOPE_PRECISION_1;
  // Exact for both branches: x·slope needs IN_W + S_W bits, x <<< S_F needs
  // IN_W + S_F (the slope may have more fraction bits than its width).
  localparam int PROD_W = IN_W + ((S_W > S_F) ? S_W : S_F);
  localparam logic signed [S_W-1:0] SLOPE = S_W'(NEGATIVE_SLOPE_VALUE);

`ifndef SYNTHESIS
  initial begin
    if (DATA_OUT_0_PARALLELISM_DIM_0 * DATA_OUT_0_PARALLELISM_DIM_1 != LANES)
      $fatal(1, "fixed_leaky_relu: DATA_OUT_0 parallelism must match DATA_IN_0");
  end
`endif

  for (genvar i = 0; i < LANES; i++) begin : g_lane
    logic signed [PROD_W-1:0] x;
    logic signed [PROD_W-1:0] y;
    assign x = PROD_W'($signed(data_in_0[i]));
    // Both branches carry IN_FRAC + S_F fraction bits.
    assign y = x[PROD_W-1] ? x * PROD_W'(SLOPE) : x <<< S_F;
    fixed_cast #(
        .IN_WIDTH      (PROD_W),
        .IN_FRAC_WIDTH (DATA_IN_0_PRECISION_1 + S_F),
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
