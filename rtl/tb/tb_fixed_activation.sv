// tb_fixed_activation: fixed_relu (LEAKY = 0), fixed_leaky_relu (LEAKY = 1)
// or fixed_gelu (LEAKY = 2) against the Go integer model (rtl.ReLU,
// rtl.LeakyReLU, rtl.GELU): BEATS beats of
// P0*P1 lanes are read from x.hex, the expected lanes from y.hex, both written
// by Go (rtl.ActivationCase.Files: one element per line, two's complement
// hex). Each beat is offered with random valid and random ready; every lane of
// every beat is compared, and valid/ready must pass straight through.
// Parameters by -G (rtl.ActivationCase.Testbench).
`timescale 1ns / 1ps
module tb_fixed_activation #(
    parameter int LEAKY = 1,
    parameter int IN_W  = 8,
    parameter int IN_F  = 3,
    parameter int OUT_W = 8,
    parameter int OUT_F = 3,
    parameter int S_W   = 8,  // NEGATIVE_SLOPE_PRECISION_0
    parameter int S_F   = 4,  // NEGATIVE_SLOPE_PRECISION_1
    parameter int S_V   = 1,  // NEGATIVE_SLOPE_VALUE
    parameter int P0    = 4,
    parameter int P1    = 1,
    parameter int BEATS = 64
);
  `include "tb_report.svh"
  localparam int L = P0 * P1;

  logic clk = 0, rst = 0;
  logic [IN_W-1:0] x[L-1:0];
  logic [OUT_W-1:0] y[L-1:0];
  // Driven through a packed vector: Verilator 5.006 does not wake logic that
  // reads unpacked-array elements written from a timed initial block;
  // whole-vector writes of packed variables do.
  logic [L*IN_W-1:0] x_p;
  for (genvar i = 0; i < L; i++) begin : g_drive
    assign x[i] = x_p[i*IN_W+:IN_W];
  end
  logic iv, ir, ov, orr;

  if (LEAKY == 2) begin : g_gelu
    fixed_gelu #(
        .DATA_IN_0_PRECISION_0(IN_W), .DATA_IN_0_PRECISION_1(IN_F),
        .DATA_IN_0_TENSOR_SIZE_DIM_0(P0), .DATA_IN_0_PARALLELISM_DIM_0(P0),
        .DATA_IN_0_TENSOR_SIZE_DIM_1(P1), .DATA_IN_0_PARALLELISM_DIM_1(P1),
        .DATA_OUT_0_PRECISION_0(OUT_W), .DATA_OUT_0_PRECISION_1(OUT_F)
    ) dut (
        .clk(clk), .rst(rst), .data_in_0(x), .data_in_0_valid(iv), .data_in_0_ready(ir),
        .data_out_0(y), .data_out_0_valid(ov), .data_out_0_ready(orr)
    );
  end else if (LEAKY != 0) begin : g_leaky
    fixed_leaky_relu #(
        .DATA_IN_0_PRECISION_0(IN_W), .DATA_IN_0_PRECISION_1(IN_F),
        .DATA_IN_0_TENSOR_SIZE_DIM_0(P0), .DATA_IN_0_PARALLELISM_DIM_0(P0),
        .DATA_IN_0_TENSOR_SIZE_DIM_1(P1), .DATA_IN_0_PARALLELISM_DIM_1(P1),
        .NEGATIVE_SLOPE_PRECISION_0(S_W), .NEGATIVE_SLOPE_PRECISION_1(S_F),
        .NEGATIVE_SLOPE_VALUE(S_V),
        .DATA_OUT_0_PRECISION_0(OUT_W), .DATA_OUT_0_PRECISION_1(OUT_F)
    ) dut (
        .clk(clk), .rst(rst), .data_in_0(x), .data_in_0_valid(iv), .data_in_0_ready(ir),
        .data_out_0(y), .data_out_0_valid(ov), .data_out_0_ready(orr)
    );
  end else begin : g_relu
    fixed_relu #(
        .DATA_IN_0_PRECISION_0(IN_W), .DATA_IN_0_PRECISION_1(IN_F),
        .DATA_IN_0_TENSOR_SIZE_DIM_0(P0), .DATA_IN_0_PARALLELISM_DIM_0(P0),
        .DATA_IN_0_TENSOR_SIZE_DIM_1(P1), .DATA_IN_0_PARALLELISM_DIM_1(P1),
        .DATA_OUT_0_PRECISION_0(OUT_W), .DATA_OUT_0_PRECISION_1(OUT_F)
    ) dut (
        .clk(clk), .rst(rst), .data_in_0(x), .data_in_0_valid(iv), .data_in_0_ready(ir),
        .data_out_0(y), .data_out_0_valid(ov), .data_out_0_ready(orr)
    );
  end

  logic [IN_W-1:0] xs[BEATS*L];
  logic [OUT_W-1:0] ys[BEATS*L];

  initial begin
    logic [L*IN_W-1:0] p;
    tb_seed();
    $readmemh("x.hex", xs);
    $readmemh("y.hex", ys);
    for (int t = 0; t < BEATS; t++) begin
      iv  = 1'($urandom);
      orr = 1'($urandom);
      for (int i = 0; i < L; i++) p[i*IN_W+:IN_W] = xs[t*L+i];
      x_p = p;
      #1;
      tb_check($sformatf("beat %0d valid", t), longint'(ov), longint'(iv));
      tb_check($sformatf("beat %0d ready", t), longint'(ir), longint'(orr));
      for (int i = 0; i < L; i++)
        tb_check($sformatf("beat %0d lane %0d x=%0d", t, i, $signed(xs[t*L+i])),
                 longint'($signed(y[i])), longint'($signed(ys[t*L+i])));
    end
    tb_finish(tb_checks, tb_errors);
  end
endmodule
