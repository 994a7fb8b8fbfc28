// tb_fixed_relu: directed case from the spec (Q5.3: [-3, 0, 5, -128] ->
// [0, 0, 5, 0]) and random beats with random valid/ready on two
// configurations (equal formats; Q(10,4) -> Q(6,2), which floors and
// saturates). Checks every lane against max(x, 0) cast with a real-number
// model, and that valid/ready pass straight through.
`timescale 1ns / 1ps
module tb_fixed_relu;
  `include "tb_report.svh"
  // Waveforms: +trace dumps every signal to dump.vcd (needs a model built
  // with --trace; rtl.Testbench.Trace).
  initial
    if ($test$plusargs("trace")) begin
      $dumpfile("dump.vcd");
      $dumpvars(0, tb_fixed_relu);
    end
  localparam int L = 4;

  logic clk = 0, rst = 0;
  logic [7:0] a_in[L-1:0], a_out[L-1:0];
  logic [9:0] b_in[L-1:0];
  logic [5:0] b_out[L-1:0];
  // Driven through packed vectors: Verilator 5.006 does not wake logic that
  // reads unpacked-array elements (or variable part-selects) written from a
  // timed initial block; whole-vector writes of packed variables do.
  logic [L*8-1:0] a_in_p;
  logic [L*10-1:0] b_in_p;
  for (genvar i = 0; i < L; i++) begin : g_drive
    assign a_in[i] = a_in_p[i*8+:8];
    assign b_in[i] = b_in_p[i*10+:10];
  end
  logic a_iv, a_ir, a_ov, a_or, b_iv, b_ir, b_ov, b_or;

  fixed_relu #(
      .DATA_IN_0_PRECISION_0(8), .DATA_IN_0_PRECISION_1(3), .DATA_IN_0_TENSOR_SIZE_DIM_0(8),
      .DATA_IN_0_PARALLELISM_DIM_0(L)
  ) dut_a (
      .clk(clk), .rst(rst), .data_in_0(a_in), .data_in_0_valid(a_iv), .data_in_0_ready(a_ir),
      .data_out_0(a_out), .data_out_0_valid(a_ov), .data_out_0_ready(a_or)
  );
  fixed_relu #(
      .DATA_IN_0_PRECISION_0(10), .DATA_IN_0_PRECISION_1(4), .DATA_IN_0_TENSOR_SIZE_DIM_0(4),
      .DATA_IN_0_PARALLELISM_DIM_0(2), .DATA_IN_0_PARALLELISM_DIM_1(2),
      .DATA_OUT_0_PRECISION_0(6), .DATA_OUT_0_PRECISION_1(2)
  ) dut_b (
      .clk(clk), .rst(rst), .data_in_0(b_in), .data_in_0_valid(b_iv), .data_in_0_ready(b_ir),
      .data_out_0(b_out), .data_out_0_valid(b_ov), .data_out_0_ready(b_or)
  );

  // clamp(floor(max(x,0) * 2^(of-if))) to ow bits
  function automatic longint model(input longint x, input int if_, input int ow, input int of_);
    longint m, hi;
    if (x < 0) x = 0;
    m = longint'($floor(real'(x) * (2.0 ** (of_ - if_))));
    hi = (64'sd1 <<< (ow - 1)) - 1;
    return (m > hi) ? hi : m;
  endfunction

  initial begin
    logic [L*8-1:0] pa;
    logic [$bits(b_in_p)-1:0] pb;
    longint directed_in[4] = '{-3, 0, 5, -128};
    longint directed_out[4] = '{0, 0, 5, 0};
    tb_seed();
    a_iv = 1;
    a_or = 1;
    for (int i = 0; i < L; i++) pa[i*8+:8] = 8'(directed_in[i]);
    a_in_p = pa;
    #1;
    for (int i = 0; i < L; i++)
      tb_check($sformatf("directed lane %0d", i), longint'($signed(a_out[i])), directed_out[i]);
    for (int t = 0; t < 3000; t++) begin
      a_iv = 1'($urandom);
      a_or = 1'($urandom);
      b_iv = 1'($urandom);
      b_or = 1'($urandom);
      for (int i = 0; i < L; i++) begin
        pa[i*8+:8] = 8'($urandom);
        pb[i*10+:10] = 10'($urandom);
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
                 model(longint'($signed(a_in[i])), 3, 8, 3));
        tb_check($sformatf("b lane %0d x=%0d", i, $signed(b_in[i])), longint'($signed(b_out[i])),
                 model(longint'($signed(b_in[i])), 4, 6, 2));
      end
    end
    tb_finish(tb_checks, tb_errors);
  end
endmodule
