// tb_skid_buffer: random traffic with random backpressure through a
// skid_buffer; checks order and values (no loss, no duplicates), that a
// stalled output holds its beat, and full throughput when never stalled.
`timescale 1ns / 1ps
module tb_skid_buffer;
  `include "tb_report.svh"
  // Waveforms: +trace dumps every signal to dump.vcd (needs a model built
  // with --trace; rtl.Testbench.Trace).
  initial
    if ($test$plusargs("trace")) begin
      $dumpfile("dump.vcd");
      $dumpvars(0, tb_skid_buffer);
    end
  localparam int W = 16;
  localparam int BEATS = 3000;

  logic clk = 0, rst = 1;
  always #5 clk = ~clk;

  logic [W-1:0] din, dout;
  logic din_valid = 0, din_ready, dout_valid, dout_ready = 0;
  skid_buffer #(.DATA_WIDTH(W)) dut (
      .clk(clk), .rst(rst),
      .data_in(din), .data_in_valid(din_valid), .data_in_ready(din_ready),
      .data_out(dout), .data_out_valid(dout_valid), .data_out_ready(dout_ready)
  );

  logic [W-1:0] stream[BEATS];
  int sent = 0, got = 0, cycle = 0;
  int p_valid = 50, p_ready = 50;  // percent
  logic stalled = 0;
  logic [W-1:0] stalled_data;
  int full_start = -1;

  initial begin
    tb_seed();
    for (int i = 0; i < BEATS; i++) stream[i] = W'($urandom);
  end

  always @(posedge clk) begin
    cycle <= cycle + 1;
    if (cycle == 4) rst <= 0;
    if (!rst) begin
      // phases: random traffic, then everything open (throughput check)
      if (sent == BEATS - 500) begin
        p_valid <= 100;
        p_ready <= 100;
      end
      // output side
      if (stalled) begin
        if (!dout_valid) tb_fail("stalled beat dropped");
        else tb_check("stalled beat held", longint'(dout), longint'(stalled_data));
      end
      stalled <= dout_valid && !dout_ready;
      stalled_data <= dout;
      if (dout_valid && dout_ready) begin
        tb_check($sformatf("beat %0d", got), longint'(dout), longint'(stream[got]));
        got <= got + 1;
        if (got == BEATS - 400) full_start <= cycle;
        if (got == BEATS - 100) begin
          // 300 beats in 300 cycles while valid and ready were held high
          tb_check("cycles for 300 beats at full throughput", longint'(cycle) - longint'(full_start), 300);
        end
        if (got == BEATS - 1) tb_finish(tb_checks, tb_errors);
      end
      dout_ready <= ($urandom % 100) < p_ready;
      // input side
      if (!din_valid || din_ready) begin
        if (sent < BEATS && ($urandom % 100) < p_valid) begin
          din_valid <= 1;
          din <= stream[sent];
          sent <= sent + 1;
        end else din_valid <= 0;
      end
    end
    if (cycle > 100000) begin
      tb_fail("timeout");
      tb_finish(tb_checks, tb_errors);
    end
  end
endmodule
