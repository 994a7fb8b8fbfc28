// fixed_relu: lane-wise ReLU on a valid/ready stream, zero latency.
//
// data_out_0[i] = cast(max(data_in_0[i], 0)) for all P0*P1 lanes, where the
// cast moves DATA_IN_0's fixed-point format to DATA_OUT_0's (floor rounding,
// saturation; the identity when both formats are equal, as in the lab).
// Valid goes forwards and ready backwards unchanged.
`timescale 1ns / 1ps
module fixed_relu #(
    parameter int DATA_IN_0_PRECISION_0       = 8,
    parameter int DATA_IN_0_PRECISION_1       = 3,
    parameter int DATA_IN_0_TENSOR_SIZE_DIM_0 = 8,
    parameter int DATA_IN_0_PARALLELISM_DIM_0 = 1,
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

`ifndef SYNTHESIS
  initial begin
    if (DATA_OUT_0_PARALLELISM_DIM_0 * DATA_OUT_0_PARALLELISM_DIM_1 != LANES)
      $fatal(1, "fixed_relu: DATA_OUT_0 parallelism must match DATA_IN_0");
  end
`endif

  for (genvar i = 0; i < LANES; i++) begin : g_lane
    logic [IN_W-1:0] pos;
    // Negative (sign bit set) and zero both give zero.
    assign pos = data_in_0[i][IN_W-1] ? '0 : data_in_0[i];
    fixed_cast #(
        .IN_WIDTH      (IN_W),
        .IN_FRAC_WIDTH (DATA_IN_0_PRECISION_1),
        .OUT_WIDTH     (DATA_OUT_0_PRECISION_0),
        .OUT_FRAC_WIDTH(DATA_OUT_0_PRECISION_1)
    ) cast_inst (
        .data_in (pos),
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
