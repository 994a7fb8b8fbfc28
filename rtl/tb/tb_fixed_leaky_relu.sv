// tb_fixed_leaky_relu: directed cases from the spec (Q(8,4), slope 1/16:
// -64 -> -4, -1 -> -1 (floor), and MASE's [127, 127, -64, -64] ->
// [127, 127, -4, -4]), then random beats with random valid/ready on two
// configurations (the lab's; Q(8,3) with slope 13/32 into Q(10,5)). Each lane
// is compared with clamp(floor((x < 0 ? x * slope : x) * 2^OUT_FRAC))
// computed with real numbers; valid/ready must pass straight through.
`timescale 1ns / 1ps
module tb_fixed_leaky_relu;
  `include "tb_report.svh"
  localparam int L = 4;

  logic clk = 0, rst = 0;
  logic [7:0] a_in[L-1:0], a_out[L-1:0], b_in[L-1:0];
  logic [9:0] b_out[L-1:0];
  // Driven through packed vectors: Verilator 5.006 does not wake logic that
  // reads unpacked-array elements (or variable part-selects) written from a
  // timed initial block; whole-vector writes of packed variables do.
  logic [L*8-1:0] a_in_p;
  logic [L*8-1:0] b_in_p;
  for (genvar i = 0; i < L; i++) begin : g_drive
    assign a_in[i] = a_in_p[i*8+:8];
    assign b_in[i] = b_in_p[i*8+:8];
  end
  logic a_iv, a_ir, a_ov, a_or, b_iv, b_ir, b_ov, b_or;

  fixed_leaky_relu #(
      .DATA_IN_0_PRECISION_0(8), .DATA_IN_0_PRECISION_1(4), .DATA_IN_0_PARALLELISM_DIM_0(L),
      .NEGATIVE_SLOPE_PRECISION_0(8), .NEGATIVE_SLOPE_PRECISION_1(4), .NEGATIVE_SLOPE_VALUE(1)
  ) dut_a (
      .clk(clk), .rst(rst), .data_in_0(a_in), .data_in_0_valid(a_iv), .data_in_0_ready(a_ir),
      .data_out_0(a_out), .data_out_0_valid(a_ov), .data_out_0_ready(a_or)
  );
  fixed_leaky_relu #(
      .DATA_IN_0_PRECISION_0(8), .DATA_IN_0_PRECISION_1(3), .DATA_IN_0_PARALLELISM_DIM_0(2),
      .DATA_IN_0_PARALLELISM_DIM_1(2),
      .NEGATIVE_SLOPE_PRECISION_0(6), .NEGATIVE_SLOPE_PRECISION_1(5), .NEGATIVE_SLOPE_VALUE(13),
      .DATA_OUT_0_PRECISION_0(10), .DATA_OUT_0_PRECISION_1(5)
  ) dut_b (
      .clk(clk), .rst(rst), .data_in_0(b_in), .data_in_0_valid(b_iv), .data_in_0_ready(b_ir),
      .data_out_0(b_out), .data_out_0_valid(b_ov), .data_out_0_ready(b_or)
  );

  function automatic longint model(input longint x, input int if_, input real slope, input int ow,
                                   input int of_);
    real r;
    longint m, lo, hi;
    r = real'(x) / (2.0 ** if_);
    if (x < 0) r = r * slope;
    m = longint'($floor(r * (2.0 ** of_)));
    lo = -(64'sd1 <<< (ow - 1));
    hi = (64'sd1 <<< (ow - 1)) - 1;
    if (m < lo) m = lo;
    if (m > hi) m = hi;
    return m;
  endfunction


  initial begin
    logic [L*8-1:0] pa;
    logic [$bits(b_in_p)-1:0] pb;
    longint directed_in[3][4] = '{'{-64, -1, 0, 5}, '{127, 127, -64, -64}, '{-128, -16, -17, 16}};
    longint directed_out[3][4] = '{'{-4, -1, 0, 5}, '{127, 127, -4, -4}, '{-8, -1, -2, 16}};
    tb_seed();
    a_iv = 1;
    a_or = 1;
    // Inline (not in a task): Verilator 5.006 does not wake the DUT for writes
    // made inside a task called from a timed process.
    for (int d = 0; d < 3; d++) begin
      for (int i = 0; i < L; i++) pa[i*8+:8] = 8'(directed_in[d][i]);
      a_in_p = pa;
      #1;
      for (int i = 0; i < L; i++)
        tb_check($sformatf("directed x=%0d", directed_in[d][i]), longint'($signed(a_out[i])),
                 directed_out[d][i]);
    end
    for (int t = 0; t < 3000; t++) begin
      a_iv = 1'($urandom);
      a_or = 1'($urandom);
      b_iv = 1'($urandom);
      b_or = 1'($urandom);
      for (int i = 0; i < L; i++) begin
        pa[i*8+:8] = 8'($urandom);
        pb[i*8+:8] = 8'($urandom);
      end
    a_in_p = pa;
    b_in_p = pb;
      #1;
      tb_check("a valid", longint'(a_ov), longint'(a_iv));
      tb_check("a ready", longint'(a_ir), longint'(a_or));
      tb_check("b valid", longint'(b_ov), longint'(b_iv));
      tb_check("b ready", longint'(b_ir), longint'(b_or));
      for (int i = 0; i < L; i++) begin
        tb_check($sformatf("a lane %0d x=%0d", i, $signed(a_in[i])), longint'($signed(a_out[i])),
                 model(longint'($signed(a_in[i])), 4, 1.0 / 16.0, 8, 4));
        tb_check($sformatf("b lane %0d x=%0d", i, $signed(b_in[i])), longint'($signed(b_out[i])),
                 model(longint'($signed(b_in[i])), 3, 13.0 / 32.0, 10, 5));
      end
    end
    tb_finish(tb_checks, tb_errors);
  end
endmodule
