// fixed_adder: lane-wise sum of two valid/ready streams, the residual add of
// a transformer block, one cycle of latency.
//
// data_out_0[i] = cast(data_in_0[i] + data_in_1[i]) for all P0*P1 lanes. The
// two inputs may have different fixed-point formats: both are aligned
// exactly to the larger fraction width (left shifts), summed with one bit of
// headroom, and the exact sum is cast to DATA_OUT_0's format (floor
// rounding, saturation; rtl.Add is the Go model). Each input passes through
// its own skid buffer, so data_in_0_ready and data_in_1_ready come from
// flip-flops: no combinational path from either input's valid to a ready.
// A beat leaves when both buffered inputs hold one and the output is ready.
`timescale 1ns / 1ps
module fixed_adder #(
    parameter int DATA_IN_0_PRECISION_0       = 8,
    parameter int DATA_IN_0_PRECISION_1       = 3,
    parameter int DATA_IN_0_TENSOR_SIZE_DIM_0 = 8,
    parameter int DATA_IN_0_PARALLELISM_DIM_0 = 1,
    parameter int DATA_IN_0_TENSOR_SIZE_DIM_1 = 1,
    parameter int DATA_IN_0_PARALLELISM_DIM_1 = 1,

    parameter int DATA_IN_1_PRECISION_0       = DATA_IN_0_PRECISION_0,
    parameter int DATA_IN_1_PRECISION_1       = DATA_IN_0_PRECISION_1,
    parameter int DATA_IN_1_TENSOR_SIZE_DIM_0 = DATA_IN_0_TENSOR_SIZE_DIM_0,
    parameter int DATA_IN_1_PARALLELISM_DIM_0 = DATA_IN_0_PARALLELISM_DIM_0,
    parameter int DATA_IN_1_TENSOR_SIZE_DIM_1 = DATA_IN_0_TENSOR_SIZE_DIM_1,
    parameter int DATA_IN_1_PARALLELISM_DIM_1 = DATA_IN_0_PARALLELISM_DIM_1,

    parameter int DATA_OUT_0_PRECISION_0       = DATA_IN_0_PRECISION_0,
    parameter int DATA_OUT_0_PRECISION_1       = DATA_IN_0_PRECISION_1,
    parameter int DATA_OUT_0_TENSOR_SIZE_DIM_0 = DATA_IN_0_TENSOR_SIZE_DIM_0,
    parameter int DATA_OUT_0_PARALLELISM_DIM_0 = DATA_IN_0_PARALLELISM_DIM_0,
    parameter int DATA_OUT_0_TENSOR_SIZE_DIM_1 = DATA_IN_0_TENSOR_SIZE_DIM_1,
    parameter int DATA_OUT_0_PARALLELISM_DIM_1 = DATA_IN_0_PARALLELISM_DIM_1
) (
    input  logic                              clk,
    input  logic                              rst,
    input  logic [ DATA_IN_0_PRECISION_0-1:0] data_in_0       [DATA_IN_0_PARALLELISM_DIM_0*DATA_IN_0_PARALLELISM_DIM_1-1:0],
    input  logic                              data_in_0_valid,
    output logic                              data_in_0_ready,
    input  logic [ DATA_IN_1_PRECISION_0-1:0] data_in_1       [DATA_IN_1_PARALLELISM_DIM_0*DATA_IN_1_PARALLELISM_DIM_1-1:0],
    input  logic                              data_in_1_valid,
    output logic                              data_in_1_ready,
    output logic [DATA_OUT_0_PRECISION_0-1:0] data_out_0      [DATA_OUT_0_PARALLELISM_DIM_0*DATA_OUT_0_PARALLELISM_DIM_1-1:0],
    output logic                              data_out_0_valid,
    input  logic                              data_out_0_ready
);
  localparam int LANES = DATA_IN_0_PARALLELISM_DIM_0 * DATA_IN_0_PARALLELISM_DIM_1;
  localparam int W0 = DATA_IN_0_PRECISION_0;
  localparam int W1 = DATA_IN_1_PRECISION_0;
  localparam int F0 = DATA_IN_0_PRECISION_1;
  localparam int F1 = DATA_IN_1_PRECISION_1;
  // The common fraction width, each input's shift to it, and the sum's width:
  // the wider aligned input plus one bit of carry.
  localparam int F = (F0 > F1) ? F0 : F1;
  localparam int A0 = W0 + F - F0;
  localparam int A1 = W1 + F - F1;
  localparam int SUM_W = ((A0 > A1) ? A0 : A1) + 1;

`ifndef SYNTHESIS
  initial begin
    if (DATA_IN_1_PARALLELISM_DIM_0 * DATA_IN_1_PARALLELISM_DIM_1 != LANES ||
        DATA_OUT_0_PARALLELISM_DIM_0 * DATA_OUT_0_PARALLELISM_DIM_1 != LANES)
      $fatal(1, "fixed_adder: DATA_IN_1 and DATA_OUT_0 parallelism must match DATA_IN_0");
  end
`endif

  // Both inputs, packed, through their skid buffers.
  logic [LANES*W0-1:0] in0_packed, buf0;
  logic [LANES*W1-1:0] in1_packed, buf1;
  logic buf0_valid, buf1_valid, buf0_ready, buf1_ready;
  for (genvar i = 0; i < LANES; i++) begin : g_pack
    assign in0_packed[i*W0+:W0] = data_in_0[i];
    assign in1_packed[i*W1+:W1] = data_in_1[i];
  end
  skid_buffer #(
      .DATA_WIDTH(LANES * W0)
  ) in0_buffer (
      .clk(clk), .rst(rst),
      .data_in(in0_packed), .data_in_valid(data_in_0_valid), .data_in_ready(data_in_0_ready),
      .data_out(buf0), .data_out_valid(buf0_valid), .data_out_ready(buf0_ready)
  );
  skid_buffer #(
      .DATA_WIDTH(LANES * W1)
  ) in1_buffer (
      .clk(clk), .rst(rst),
      .data_in(in1_packed), .data_in_valid(data_in_1_valid), .data_in_ready(data_in_1_ready),
      .data_out(buf1), .data_out_valid(buf1_valid), .data_out_ready(buf1_ready)
  );

  // The join: a beat leaves with one of each; each buffer waits for the other.
  assign data_out_0_valid = buf0_valid && buf1_valid;
  assign buf0_ready = data_out_0_ready && buf1_valid;
  assign buf1_ready = data_out_0_ready && buf0_valid;

  for (genvar i = 0; i < LANES; i++) begin : g_lane
    logic signed [SUM_W-1:0] a, b, sum;
    assign a   = SUM_W'($signed(buf0[i*W0+:W0])) <<< (F - F0);
    assign b   = SUM_W'($signed(buf1[i*W1+:W1])) <<< (F - F1);
    assign sum = a + b;
    fixed_cast #(
        .IN_WIDTH      (SUM_W),
        .IN_FRAC_WIDTH (F),
        .OUT_WIDTH     (DATA_OUT_0_PRECISION_0),
        .OUT_FRAC_WIDTH(DATA_OUT_0_PRECISION_1)
    ) cast_inst (
        .data_in (sum),
        .data_out(data_out_0[i])
    );
  end

  // Waiver: tensor sizes are part of MASE's parameter interface; a lane-wise
  // stage needs none.
  /* verilator lint_off UNUSEDPARAM */
  localparam int UNUSED = DATA_IN_0_TENSOR_SIZE_DIM_0 + DATA_IN_0_TENSOR_SIZE_DIM_1
      + DATA_IN_1_TENSOR_SIZE_DIM_0 + DATA_IN_1_TENSOR_SIZE_DIM_1
      + DATA_OUT_0_TENSOR_SIZE_DIM_0 + DATA_OUT_0_TENSOR_SIZE_DIM_1;
  /* verilator lint_on UNUSEDPARAM */
endmodule
